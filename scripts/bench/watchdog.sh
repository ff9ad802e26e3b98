#!/usr/bin/env bash
# watchdog.sh PARENT_PID WORKDIR LOGFILE — safety net for scripts/bench.sh (and placeholders.py).
#
# Started in its own session by bench.sh. If bench.sh dies without cleaning up (SIGKILL, OOM),
# this stops the measured step (WORKDIR/step.pid) and the daemons (WORKDIR/pids), unmounts every
# mount under WORKDIR and deletes WORKDIR. Only processes whose command line names WORKDIR are
# signalled (guards against PID reuse). bench.sh kills the watchdog (by its PID) when it cleans up normally.
parent=$1 w=${2%/} logfile=${3:-/dev/null}
[[ -n $parent && -d $w ]] || exit 64

alive() {
    local s
    s=$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
    [[ -n $s && $s != Z ]]
}
ours() {  # a live process started by bench.sh for this work directory
    alive "$1" && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$w/"
}
mounts_under() { awk -v w="$w/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r; }

while alive "$parent"; do sleep 1; done
sleep 1
[[ -d $w ]] || exit 0
exec 2>>"$logfile"
echo "$(date +%H:%M:%S) [bench watchdog] bench.sh ($parent) is gone; cleaning up $w" >&2
step=$(cat "$w/step.pid" 2>/dev/null)
for p in $step; do ours "$p" && kill -TERM "$p" 2>/dev/null; done   # timeout(1) passes it on
pids=$(cat "$w/pids" 2>/dev/null)
for p in $pids; do ours "$p" && kill -TERM "$p" 2>/dev/null; done
for _ in 1 2 3 4 5 6 7 8 9 10; do
    [[ -z $(mounts_under) ]] && break
    for mp in $(mounts_under); do fusermount3 -u "$mp" 2>/dev/null; done
    sleep 1
done
for p in $step $pids; do ours "$p" && kill -KILL "$p" 2>/dev/null; done
for mp in $(mounts_under); do fusermount3 -uz "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null; done
# bench/page_reporting.sh paused the balloon's free page reporting: put the old order back.
old=$(cat "$w/page_reporting_order" 2>/dev/null)
[[ $old =~ ^[0-9]+$ ]] && echo "$old" >/sys/module/page_reporting/parameters/page_reporting_order
if [[ -z $(mounts_under) ]]; then
    rm -rf --one-file-system "$w"
else
    echo "[bench watchdog] mounts under $w remain; not deleting it" >&2
fi
