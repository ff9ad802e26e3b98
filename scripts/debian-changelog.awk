# Turns CHANGELOG.md into a Debian changelog (deb-changelog(5)) for the package's
# /usr/share/doc/syncfs/changelog.gz: one entry per "## VERSION" heading ("## Unreleased" is the
# entry of -v version, distribution UNRELEASED), each "- " item a "  * " line and each "  - "
# sub-item a "    - " line, rewrapped to 78 columns.
#   awk -v version=0.1.0~dev -v maintainer='NAME <MAIL>' -v date="$(date -R)" \
#       -f scripts/debian-changelog.awk CHANGELOG.md
# A released heading's entry carries its date from the variable dates ("VERSION=DATE;…") when
# given, else `date`.
function flush_item() {
    if (item == "") return
    wrap(item, item_first, item_rest)
    item = ""
}
function flush_entry() {
    flush_item()
    if (!open) return
    printf "\n -- %s  %s\n", maintainer, entry_date
    open = 0
}
# Prints text in lines of at most 78 columns: the first led by first, the others by rest.
function wrap(text, first, rest,    words, count, i, line, lead) {
    count = split(text, words, /[ \t]+/)
    line = ""
    lead = first
    for (i = 1; i <= count; i++) {
        if (words[i] == "") continue
        if (line != "" && length(lead line " " words[i]) > 78) {
            print lead line
            lead = rest
            line = words[i]
        } else {
            line = (line == "" ? words[i] : line " " words[i])
        }
    }
    if (line != "") print lead line
}
BEGIN {
    open = 0
    item = ""
    entries = 0
    count = split(dates, pairs, ";")
    for (i = 1; i <= count; i++) {
        split(pairs[i], pair, "=")
        released[pair[1]] = pair[2]
    }
}
/^## / {
    flush_entry()
    heading = substr($0, 4)
    if (heading == "Unreleased") {
        entry_version = version
        distribution = "UNRELEASED"
        entry_date = date
    } else {
        entry_version = heading
        distribution = "unstable"
        entry_date = (heading in released) ? released[heading] : date
    }
    if (entries > 0) print ""
    printf "syncfs (%s) %s; urgency=medium\n\n", entry_version, distribution
    open = 1
    entries++
    next
}
!open { next }
/^- / { flush_item(); item = substr($0, 3); item_first = "  * "; item_rest = "    "; next }
/^  - / { flush_item(); item = substr($0, 5); item_first = "    - "; item_rest = "      "; next }
/^[ \t]*$/ { flush_item(); next }
/^  / { item = item " " substr($0, 3); next }
{ flush_item(); item = $0; item_first = "  "; item_rest = "  " }
END {
    flush_entry()
    if (entries == 0) {
        print "debian-changelog.awk: no \"## \" heading in the changelog" > "/dev/stderr"
        exit 1
    }
}
