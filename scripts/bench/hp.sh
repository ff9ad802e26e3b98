# scripts/bench/hp.sh — the `hp` target of scripts/bench.sh: libfuse 3.14's own
# `example/passthrough_hp.cc`, the FUSE ceiling of this kernel and library.
#
# Sourced by bench.sh (needs its log, die, alive, is_mounted, wait_gone, force_unmount, $W, $LOGS).
# The source is never part of this repository: `apt-get source --download-only fuse3=3.14.0-4`
# takes it from the Debian archive this machine installs from (apt checks it against the archive's
# signed index), through a private deb-src list in the bench's work directory, so the machine's
# apt configuration is left as it is. The upstream tarball is checked once more against the
# SHA-256 in Debian's fuse3_3.14.0-4.dsc, and only two files are taken from it: the example and
# the option parser it includes. Everything lands in the work directory and goes with it.
#
#   hp_build      apt-get source (or take $HP_TARBALL), verify, extract, compile → $HP_BIN
#   hp_start      mount `passthrough_hp --foreground $W/hp/source $HP_MP` in the background
#   hp_stop       fusermount3 -u, then TERM, then KILL (like rclone), in every cleanup path

HP_SOURCE_VERSION=3.14.0-4
HP_SHA256=96115b2a8ff34bd1e0c7b00c5dfd8297571d7e165042b94498c9a26356a9a70a
HP_MEMBERS=(fuse-3.14.0/example/passthrough_hp.cc fuse-3.14.0/example/cxxopts.hpp)
HP_PID= HP_MP=$W/hp/mnt HP_BIN=$W/hp/passthrough_hp

# hp_prerequisites — the tools the build needs; bench.sh dies early when one is missing.
# What is missing is installed by `scripts/install-deps.sh --bench` (g++, libfuse3-dev, xz).
hp_prerequisites() {
    local c
    if ! command -v g++ >/dev/null || ! command -v xz >/dev/null || ! pkg-config --exists fuse3 2>/dev/null; then
        log "hp target: installing its build dependencies (scripts/install-deps.sh --bench)"
        "$REPO_ROOT/scripts/install-deps.sh" --bench >&2 || die "hp target: installing g++/libfuse3-dev failed"
    fi
    for c in g++ pkg-config tar xz sha256sum; do
        command -v "$c" >/dev/null || die "hp target: $c not found (scripts/install-deps.sh --bench)"
    done
    [[ -n ${HP_TARBALL:-} ]] || command -v apt-get >/dev/null || die "hp target: apt-get not found"
    pkg-config --exists fuse3 || die "hp target: libfuse3-dev not installed (pkg-config fuse3)"
}

# hp_fetch_source DIR — `apt-get source --download-only` of fuse3 $HP_SOURCE_VERSION into DIR,
# from the main component of the archive and suite this machine's apt installs from, signed by
# Debian's archive keyring; apt's lists and cache stay in the work directory.
hp_fetch_source() {
    local into=$1 apt=$W/hp/apt uri suite
    read -r uri suite < <(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' \
        'Identifier: Packages' 'Component: main' | grep -v -e '-security' -e '-updates' | head -n 1)
    [[ -n $uri && -n $suite ]] || die "hp: no Debian archive with a main component in apt's sources"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts"
    printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' "$uri" "$suite" \
        >"$apt/sources.list"
    local options=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/parts"
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o APT::Sandbox::User=root
        -o Debug::NoLocking=1)
    log "hp: apt-get source fuse3=$HP_SOURCE_VERSION from $uri $suite"
    apt-get "${options[@]}" -qq update >"$LOGS/hp-apt.log" 2>&1 \
        || { tail -n 5 "$LOGS/hp-apt.log" >&2; die "hp: apt-get update of the deb-src list failed"; }
    (cd "$into" && apt-get "${options[@]}" -qq source --download-only "fuse3=$HP_SOURCE_VERSION") \
        >>"$LOGS/hp-apt.log" 2>&1 || { tail -n 5 "$LOGS/hp-apt.log" >&2; die "hp: apt-get source fuse3 failed"; }
}

hp_build() {
    local dir=$W/hp/build tarball actual
    mkdir -p "$dir"
    if [[ -n ${HP_TARBALL:-} ]]; then
        tarball=$HP_TARBALL
    else
        hp_fetch_source "$dir"
        tarball=$dir/fuse3_3.14.0.orig.tar.xz
    fi
    actual=$(sha256sum <"$tarball" | cut -d' ' -f1)
    [[ $actual == "$HP_SHA256" ]] \
        || die "hp: $tarball has sha256 $actual, expected $HP_SHA256 (Debian's fuse3_3.14.0-4.dsc); refusing it"
    tar -xJf "$tarball" -C "$dir" "${HP_MEMBERS[@]}" || die "hp: extracting the example failed"
    # The three HAVE_ macros are what libfuse's own build (meson's config.h) defines on Linux
    # with glibc; without them the example answers EOPNOTSUPP to utimensat (tar fails), has no
    # fallocate and no extended attributes at all (no xattr round trips: not the ceiling of a
    # file system that has them).
    # shellcheck disable=SC2046
    g++ -std=c++17 -O2 -DHAVE_UTIMENSAT -DHAVE_POSIX_FALLOCATE -DHAVE_SETXATTR \
        "$dir/fuse-3.14.0/example/passthrough_hp.cc" -o "$HP_BIN" $(pkg-config fuse3 --cflags --libs) \
        >"$LOGS/hp-build.log" 2>&1 || { tail -n 20 "$LOGS/hp-build.log" >&2; die "hp: g++ failed"; }
    HP_ID="libfuse $(pkg-config --modversion fuse3), passthrough_hp.cc from fuse3_3.14.0.orig.tar.xz (sha256 ${HP_SHA256:0:12}), g++ $(g++ -dumpfullversion) -O2, libfuse's HAVE_UTIMENSAT/POSIX_FALLOCATE/SETXATTR"
    log "hp: built $HP_BIN"
}

# Mounted over a plain local directory, like rclone's remote; its defaults (86400 s entry and
# attribute timeouts, splice, writeback cache where the kernel offers it) are the ceiling.
hp_start() {
    mkdir -p "$W/hp/source" "$HP_MP"
    # passthrough_hp keeps one descriptor open per inode the kernel knows (it raises its soft
    # limit to the hard one): a tree larger than the hard limit cannot be held (EMFILE/EBADF).
    # Raised here where the process may (root with CAP_SYS_RESOURCE, up to fs.nr_open);
    # `hp_max_files` tells the workloads what fits.
    # shellcheck disable=SC2086
    (
        ulimit -Hn 1048576 2>/dev/null && ulimit -Sn 1048576 2>/dev/null
        exec "$HP_BIN" --foreground ${HP_MOUNT_ARGS:-} "$W/hp/source" "$HP_MP"
    ) </dev/null >"$LOGS/hp.log" 2>&1 &
    HP_PID=$!
    echo "$HP_PID" >>"$W/pids"
    wait_mounted "$HP_MP" "$HP_PID" "$LOGS/hp.log" "passthrough_hp did not mount"
    log "passthrough_hp mounted at $HP_MP (pid $HP_PID)"
}

# hp_max_files — how many files passthrough_hp can hold at once: its descriptor limit less a margin.
hp_max_files() {
    local limit
    limit=$(awk '/^Max open files/ { print $5 }' "/proc/$HP_PID/limits" 2>/dev/null)
    [[ $limit =~ ^[0-9]+$ ]] && echo $((limit - 200)) || echo 0
}

hp_stop() {
    [[ -n $HP_PID ]] || return 0
    if is_mounted "$HP_MP"; then
        local i
        for i in 1 2 3 4 5; do fusermount3 -u "$HP_MP" 2>/dev/null && break; sleep 1; done
    fi
    wait_gone "$HP_PID" 15 || { kill -TERM "$HP_PID" 2>/dev/null; wait_gone "$HP_PID" 5; } \
        || kill -KILL "$HP_PID" 2>/dev/null
    force_unmount "$HP_MP" "$HP_PID"
    wait "$HP_PID" 2>/dev/null
    HP_PID=
}
