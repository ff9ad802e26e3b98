# shellcheck shell=bash
# scripts/bench/page_reporting.sh — sourced by scripts/bench.sh: pause the guest's free page
# reporting for the length of the bench, and put it back on every exit path.
# Not a program of its own: it uses $W, log and KEEP_PAGE_REPORTING from bench.sh.
#
# Why: on a virtual machine whose balloon device reports free pages to the host
# (VIRTIO_BALLOON_F_REPORTING), pages the guest frees — 2 GiB at each `drop_caches` of a 1 GiB
# read — are handed back to the host about 2 s later, and the first write to each of them again
# costs a fault in the host. Whoever writes a fresh page first pays it: the kernel's copy into a
# FUSE mount's page cache, in the daemon's time. A cold read then runs 2.5–4× slower than the same
# read started at once after the drop, for every target (native too), and which regime a target's
# read falls in depends on the seconds between the drop and the read: noise of 2× between targets
# in one run. With reporting paused every cold read gets pages the host still backs, the way a
# machine without a balloon always does. Measured in doc/PERFORMANCE.md ("Cold reads and the
# balloon's free page reporting").
#
#   pause_page_reporting    raise page_reporting_order above the largest free block (nothing is
#                           reported); the old value is kept in $W/page_reporting_order so that
#                           bench/watchdog.sh restores it too if bench.sh is killed
#   restore_page_reporting  write the old value back (idempotent)

PAGE_REPORTING_KNOB=/sys/module/page_reporting/parameters/page_reporting_order
PAGE_REPORTING_NOTE=

pause_page_reporting() {
    [[ -w $PAGE_REPORTING_KNOB ]] || return 0     # no balloon reporting here, or not root
    if [[ ${KEEP_PAGE_REPORTING:-0} == 1 ]]; then
        PAGE_REPORTING_NOTE="free page reporting left on (--keep-page-reporting): cold reads vary with the seconds after each drop_caches"
        return 0
    fi
    local old paused
    old=$(cat "$PAGE_REPORTING_KNOB") || return 0
    [[ $old =~ ^[0-9]+$ ]] || return 0
    # The buddy allocator's largest order is 10 on x86-64 (MAX_PAGE_ORDER): order 11 is never free.
    paused=11
    echo "$old" >"$W/page_reporting_order"
    if ! echo "$paused" >"$PAGE_REPORTING_KNOB" 2>/dev/null || [[ $(cat "$PAGE_REPORTING_KNOB") != "$paused" ]]; then
        rm -f "$W/page_reporting_order"
        log "warning: could not pause free page reporting ($PAGE_REPORTING_KNOB); cold reads will be noisy"
        PAGE_REPORTING_NOTE="free page reporting could not be paused: cold reads vary with the seconds after each drop_caches"
        return 0
    fi
    log "free page reporting paused for the bench (page_reporting_order $old -> $paused; restored on exit)"
    PAGE_REPORTING_NOTE="The virtual machine's free page reporting (virtio balloon) was paused for the run (page_reporting_order $old -> $paused), so that pages freed by drop_caches are not handed back to the host before the cold read refills them."
}

restore_page_reporting() {
    [[ -f $W/page_reporting_order ]] || return 0
    local old
    old=$(cat "$W/page_reporting_order")
    if [[ $old =~ ^[0-9]+$ ]] && echo "$old" >"$PAGE_REPORTING_KNOB" 2>/dev/null; then
        log "free page reporting restored (page_reporting_order $old)"
        rm -f "$W/page_reporting_order"
    else
        log "ERROR: could not restore $PAGE_REPORTING_KNOB to '$old'"
    fi
}
