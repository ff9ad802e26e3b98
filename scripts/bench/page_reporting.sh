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
# machine without a balloon always does. Measured in doc/performance-log.md ("Cold reads and the
# balloon's free page reporting").
#
#   pause_page_reporting    raise page_reporting_order above the largest free block (nothing is
#                           reported); the old value is kept in $W/page_reporting_order so that
#                           bench/watchdog.sh restores it too if bench.sh is killed
#   restore_page_reporting  write the old value back (idempotent)
#
# Pausing keeps pages that are backed backed; pages reported before the bench began are not, and
# the first write to each still costs a host fault (measured: a first 1 GiB write through a fresh
# mount took 2.7 s of the daemon's CPU against 0.65 s for the next ones, whose pages had been
# touched). So pause_page_reporting then touches up to PREFAULT_GIB of free memory once, in a
# process of its own whose anonymous memory goes back to the free lists, backed, when it exits
# (~3.5 s per GiB the first time on this VM, well under a second per GiB once backed): every
# target then writes into pages the host backs, whatever its place in the run.

PAGE_REPORTING_KNOB=/sys/module/page_reporting/parameters/page_reporting_order
PAGE_REPORTING_NOTE=
PREFAULT_GIB=${PREFAULT_GIB:-8}

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
    prefault_free_memory
    PAGE_REPORTING_NOTE="The virtual machine's free page reporting (virtio balloon) was paused for the run (page_reporting_order $old -> $paused), so that pages freed by drop_caches are not handed back to the host before the cold read refills them, and up to $PREFAULT_GIB GiB of free memory was touched once first (the host backs it)."
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

# prefault_free_memory — touch min(PREFAULT_GIB GiB, free memory less 2 GiB) of anonymous memory
# once and let it go (see the top of this file). Skipped when less than 1 GiB would be touched.
prefault_free_memory() {
    local free_kib gib started
    free_kib=$(awk '/^MemFree:/ { print $2 }' /proc/meminfo)
    [[ $free_kib =~ ^[0-9]+$ ]] || return 0
    gib=$(( free_kib / 1048576 - 2 ))
    (( gib > PREFAULT_GIB )) && gib=$PREFAULT_GIB
    (( gib >= 1 )) || return 0
    started=$EPOCHREALTIME
    python3 - "$gib" <<'PY' || { log "warning: touching free memory failed"; return 0; }
import mmap, sys
size = int(sys.argv[1]) << 30
memory = mmap.mmap(-1, size)
block = b"\1" * (64 << 20)
for offset in range(0, size, len(block)):
    memory[offset:offset + len(block)] = block
PY
    log "touched $gib GiB of free memory in $(python3 -c "print(f'{$EPOCHREALTIME - $started:.1f}')") s (pages the host backs, for every target alike)"
}
