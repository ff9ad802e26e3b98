# shellcheck shell=bash
# scripts/bench/options.sh — sourced by scripts/bench.sh: the usage text and the command line (options, defaults, validation).
# Not a program of its own: it uses the variables and functions bench.sh defines before sourcing it.

usage() {
    cat <<'EOF'
Usage: scripts/bench.sh [options]

Measures, side by side, a plain directory on the same disk (native), a SyncFS mount, an
rclone mount (--vfs-cache-mode full over a local directory) and libfuse 3.14's passthrough_hp
over a local directory (hp: the FUSE ceiling, built at bench time from Debian's checksummed
source tarball), and prints medians, ratios to native and the SyncFS performance goals, and
for SyncFS and rclone the time until uploaded after each write-heavy step (seq write, create,
untar, git clone; scripts/bench/uploads.sh).

Options:
  --runs N            runs per workload; the median is reported (default 3)
  --size SIZE         sequential write/read size (default 1G; K/M/G suffixes)
  --rand-size SIZE    file size for the 4 KiB random read/write tests (default 256M)
  --rand-time SEC     duration of each random I/O test (default 5)
  --files N           files for the create/stat/delete test (default 10000)
  --tree-files N      files in the generated tree for the untar test (default 3000)
  --commits N         commits in the generated repository for git clone (default 3000)
  --repo-files N      files in that repository (default 1500)
  --rss-files N       files for the daemon memory test (default 100000)
  --rss               only the SyncFS daemon memory test
  --no-rss            skip the daemon memory test
  --sync-only         only the sync benchmarks (scripts/bench/sync.py: propagation between two
                      mounts, upload pipeline throughput, dedup after an insert, compression)
  --no-sync           skip the sync benchmarks
  --placeholders-only only the placeholder benchmarks (scripts/bench/placeholders.py: attach a
                      container of many files on a fresh mount, ls -lR of the placeholders,
                      first byte and full read of a large placeholder, daemon RSS; its own
                      rclone mount when rclone is among the targets)
  --no-placeholders   skip the placeholder benchmarks
  --merge-only        only the merge benchmark (scripts/bench/merge.py: a 10 MiB text file
                      edited on two mounts, the three-way merge and its propagation)
  --no-merge          skip the merge benchmark
  --limits-only       only the bandwidth limit benchmark (scripts/bench/limits.py: a 50 MiB
                      random file uploaded at --upload-limit 2M and read on another mount at
                      --download-limit 2M; each must take 25 s ± 5 %)
  --no-limits         skip the bandwidth limit benchmark
  --small-files-only  only the small-file benchmarks (scripts/bench/small_files.py: untar, create
                      and git clone on a local container, through `serve` and, with the
                      environment of scripts/services.sh, PostgreSQL + S3; each step's time and
                      the time until uploaded after it; create while a backlog uploads)
  --no-small-files    skip the small-file benchmarks
  --server-only       only the sync server benchmarks (scripts/bench/server.py: propagation through
                      `syncfs-mount serve` on loopback vs a local container, commits/s and chunk
                      upload MB/s with 8 concurrent clients, server RSS)
                      and, when the environment of scripts/services.sh is set, the same on
                      PostgreSQL + S3 (scripts/bench/server_db.py: two serve --database
                      processes, 8 mounts split between them, commits/s and chunk MB/s against
                      the embedded server in the same run); and the web page's render
                      times (scripts/bench/web.py: a 10,000-entry folder, goal 50 ms p95)
  --no-server         skip the sync server benchmarks
  --million           with the server benchmarks: also a container of 1,000,000 entries on both
                      backends (scripts/bench/million.py: attach by a new mount, feed catch-up,
                      server RSS; ~15-30 minutes, so not in the default run)
  --ph-files N        files in the placeholder benchmark's container (default 100000, 2000
                      with --quick)
  --targets LIST      comma-separated subset of native,syncfs,rclone,hp (default: all four)
  --workloads LIST    comma-separated subset of seq,rand,files,untar,clone,walk,b2b (default:
                      all); b2b is create then untar on each target in turn with no wait for
                      uploads between steps or targets (scripts/bench/back_to_back.sh)
  --walk-files N      files in the tree walked by `walk` (find, ls -lR, du -s; cold and warm;
                      default 20000, 2000 with --quick)
  --quick             smoke test: 1 run, small sizes (explicit options still win)
  --out FILE          also write the Markdown table to FILE
  --raw FILE          also copy the raw results (TSV: run, target, workload, value) to FILE
  --workdir DIR       where the temporary directory is created (default /var/tmp); it must be
                      on the disk you want to measure (not tmpfs)
  --keep-logs DIR     copy the daemon logs to DIR at the end
  --step-timeout SEC  timeout of one measured step (default 600, 180 with --quick)
  --keep-page-reporting
                      leave a virtual machine's free page reporting on (by default the bench
                      pauses it while it runs, touches up to 8 GiB of free memory once
                      (PREFAULT_GIB), and restores it on exit: with it on, a cold read is
                      2.5-4x slower or not depending on the seconds after drop_caches, and a
                      write into pages the host took back costs ~4x the CPU)
  --report            run nothing: print the Markdown tables of the last run whose workloads
                      ran (saved in WORKDIR/syncfs-bench-last/ by every such run); with --out
                      FILE, also write them to FILE
  -h, --help          this text

Environment:
  SYNCFS_MOUNT_BINARY  syncfs-mount executable (default: .build/release/syncfs-mount, built
                       with `swift build -c release` when missing)
  SYNCFS_MOUNT_ARGS    extra arguments for `syncfs-mount mount` (word-split)
  RCLONE_MOUNT_ARGS    extra arguments for `rclone mount` (word-split)
  HP_MOUNT_ARGS        extra arguments for passthrough_hp (word-split)
  HP_TARBALL           a local copy of fuse3_3.14.0.orig.tar.xz instead of `apt-get source`
                       (checked against the same SHA-256)

The SyncFS daemon runs as `syncfs-mount mount C MP --state-dir S --foreground --lifeline --create
--no-guard` (the delete workload removes 10,000 files at once: the mass-delete guard would hold
every later upload) with standard input from a FIFO the script holds open: if the script dies, the
daemon unmounts.
Everything (mounts, daemons, temporary files) is removed on exit, also on errors and Ctrl-C.
EOF
}

# ---------------------------------------------------------------- options
O_RUNS= O_SIZE= O_RAND_SIZE= O_RAND_TIME= O_FILES= O_TREE_FILES= O_COMMITS= O_REPO_FILES=
O_RSS_FILES= O_STEP_TIMEOUT= O_PH_FILES= O_WALK_FILES=
SYNC_MODE=default PH_MODE=default MERGE_MODE=default SERVER_MODE=default LIMITS_MODE=default SMALL_MODE=default QUICK=0 RSS_MODE=default OUT= RAW= WORKDIR=/var/tmp KEEP_LOGS= KEEP_PAGE_REPORTING=0 REPORT_ONLY=0
TARGETS=native,syncfs,rclone,hp WORKLOADS=seq,rand,files,untar,clone,walk,b2b

need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "bench.sh: $1 needs an argument" >&2; exit 64; }; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --runs) need_arg "$@"; O_RUNS=$2; shift 2 ;;
        --size) need_arg "$@"; O_SIZE=$2; shift 2 ;;
        --rand-size) need_arg "$@"; O_RAND_SIZE=$2; shift 2 ;;
        --rand-time) need_arg "$@"; O_RAND_TIME=$2; shift 2 ;;
        --files) need_arg "$@"; O_FILES=$2; shift 2 ;;
        --tree-files) need_arg "$@"; O_TREE_FILES=$2; shift 2 ;;
        --commits) need_arg "$@"; O_COMMITS=$2; shift 2 ;;
        --repo-files) need_arg "$@"; O_REPO_FILES=$2; shift 2 ;;
        --rss-files) need_arg "$@"; O_RSS_FILES=$2; shift 2 ;;
        --rss) RSS_MODE=only; SYNC_MODE=skip; PH_MODE=skip; MERGE_MODE=skip; SERVER_MODE=skip; LIMITS_MODE=skip; SMALL_MODE=skip; shift ;;
        --no-rss) RSS_MODE=skip; shift ;;
        --sync-only) SYNC_MODE=only; RSS_MODE=skip; PH_MODE=skip; MERGE_MODE=skip; SERVER_MODE=skip; LIMITS_MODE=skip; SMALL_MODE=skip; shift ;;
        --no-sync) SYNC_MODE=skip; shift ;;
        --placeholders-only) PH_MODE=only; SYNC_MODE=skip; RSS_MODE=skip; MERGE_MODE=skip; SERVER_MODE=skip; LIMITS_MODE=skip; SMALL_MODE=skip; shift ;;
        --no-placeholders) PH_MODE=skip; shift ;;
        --merge-only) MERGE_MODE=only; SYNC_MODE=skip; RSS_MODE=skip; PH_MODE=skip; SERVER_MODE=skip; LIMITS_MODE=skip; SMALL_MODE=skip; shift ;;
        --no-merge) MERGE_MODE=skip; shift ;;
        --limits-only) LIMITS_MODE=only; SYNC_MODE=skip; RSS_MODE=skip; PH_MODE=skip; MERGE_MODE=skip; SERVER_MODE=skip; SMALL_MODE=skip; shift ;;
        --no-limits) LIMITS_MODE=skip; shift ;;
        --server-only) SERVER_MODE=only; SYNC_MODE=skip; RSS_MODE=skip; PH_MODE=skip; MERGE_MODE=skip; LIMITS_MODE=skip; SMALL_MODE=skip; shift ;;
        --no-server) SERVER_MODE=skip; shift ;;
        --small-files-only) SMALL_MODE=only; SYNC_MODE=skip; RSS_MODE=skip; PH_MODE=skip; MERGE_MODE=skip; SERVER_MODE=skip; LIMITS_MODE=skip; shift ;;
        --no-small-files) SMALL_MODE=skip; shift ;;
        --million) MILLION=1; shift ;;
        --walk-files) need_arg "$@"; O_WALK_FILES=$2; shift 2 ;;
        --ph-files) need_arg "$@"; O_PH_FILES=$2; shift 2 ;;
        --targets) need_arg "$@"; TARGETS=$2; shift 2 ;;
        --workloads) need_arg "$@"; WORKLOADS=$2; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --out) need_arg "$@"; OUT=$2; shift 2 ;;
        --raw) need_arg "$@"; RAW=$2; shift 2 ;;
        --workdir) need_arg "$@"; WORKDIR=$2; shift 2 ;;
        --keep-logs) need_arg "$@"; KEEP_LOGS=$2; shift 2 ;;
        --step-timeout) need_arg "$@"; O_STEP_TIMEOUT=$2; shift 2 ;;
        --keep-page-reporting) KEEP_PAGE_REPORTING=1; shift ;;
        --report) REPORT_ONLY=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench.sh: unknown option: $1 (see --help)" >&2; exit 64 ;;
    esac
done

if [[ $QUICK == 1 ]]; then
    D_RUNS=1 D_SIZE=64M D_RAND_SIZE=32M D_RAND_TIME=2 D_FILES=1000 D_TREE_FILES=500
    D_COMMITS=300 D_REPO_FILES=200 D_RSS_FILES=10000 D_STEP_TIMEOUT=180 D_WALK_FILES=2000
else
    D_RUNS=3 D_SIZE=1G D_RAND_SIZE=256M D_RAND_TIME=5 D_FILES=10000 D_TREE_FILES=3000
    D_COMMITS=3000 D_REPO_FILES=1500 D_RSS_FILES=100000 D_STEP_TIMEOUT=600 D_WALK_FILES=20000
fi
RUNS=${O_RUNS:-$D_RUNS}
SIZE_H=${O_SIZE:-$D_SIZE}
RAND_SIZE_H=${O_RAND_SIZE:-$D_RAND_SIZE}
RAND_TIME=${O_RAND_TIME:-$D_RAND_TIME}
NFILES=${O_FILES:-$D_FILES}
TREE_FILES=${O_TREE_FILES:-$D_TREE_FILES}
COMMITS=${O_COMMITS:-$D_COMMITS}
REPO_FILES=${O_REPO_FILES:-$D_REPO_FILES}
RSS_FILES=${O_RSS_FILES:-$D_RSS_FILES}
STEP_TIMEOUT=${O_STEP_TIMEOUT:-$D_STEP_TIMEOUT}
WALK_FILES=${O_WALK_FILES:-$D_WALK_FILES}
PH_FILES=${O_PH_FILES:-}   # empty: placeholders.py's default (100000, or its --quick size)

is_uint() { [[ $1 =~ ^[0-9]+$ && $1 -gt 0 ]]; }
for v in RUNS RAND_TIME NFILES TREE_FILES COMMITS REPO_FILES RSS_FILES STEP_TIMEOUT WALK_FILES; do
    is_uint "${!v}" || { echo "bench.sh: $v must be a positive integer, got '${!v}'" >&2; exit 64; }
done
[[ -z $PH_FILES ]] || is_uint "$PH_FILES" || { echo "bench.sh: --ph-files must be a positive integer" >&2; exit 64; }
to_bytes() { numfmt --from=iec "${1%iB}" 2>/dev/null || numfmt --from=iec "${1%B}" 2>/dev/null; }
SIZE=$(to_bytes "$SIZE_H") && is_uint "$SIZE" || { echo "bench.sh: bad --size '$SIZE_H'" >&2; exit 64; }
RAND_SIZE=$(to_bytes "$RAND_SIZE_H") && is_uint "$RAND_SIZE" || { echo "bench.sh: bad --rand-size '$RAND_SIZE_H'" >&2; exit 64; }
(( RAND_SIZE % 4096 == 0 )) || { echo "bench.sh: --rand-size must be a multiple of 4 KiB" >&2; exit 64; }

declare -A WANT_T=() WANT_W=()
IFS=, read -ra _t <<<"$TARGETS"
for t in "${_t[@]}"; do
    case $t in native|syncfs|rclone|hp) WANT_T[$t]=1 ;; *) echo "bench.sh: unknown target '$t'" >&2; exit 64 ;; esac
done
IFS=, read -ra _w <<<"$WORKLOADS"
for w in "${_w[@]}"; do
    case $w in seq|rand|files|untar|clone|walk|b2b) WANT_W[$w]=1 ;; *) echo "bench.sh: unknown workload '$w'" >&2; exit 64 ;; esac
done
if [[ $RSS_MODE == only ]]; then
    WANT_W=(); WANT_T=([syncfs]=1)
fi
if [[ $SYNC_MODE == only ]]; then
    WANT_W=(); WANT_T=([syncfs]=1)
fi
PH_RCLONE=${WANT_T[rclone]:-}   # the placeholder part mounts its own rclone, if rclone is a target
if [[ $PH_MODE == only || $MERGE_MODE == only || $SERVER_MODE == only || $LIMITS_MODE == only || $SMALL_MODE == only ]]; then
    WANT_W=(); WANT_T=([syncfs]=1)
fi
DO_RSS=0
[[ $RSS_MODE != skip && -n ${WANT_T[syncfs]:-} ]] && DO_RSS=1
TARGET_ORDER=()
for t in native syncfs rclone hp; do [[ -n ${WANT_T[$t]:-} ]] && TARGET_ORDER+=("$t"); done
[[ ${#WANT_W[@]} -eq 0 || -n ${WANT_T[native]:-} ]] \
    || log "warning: native is not among the targets; ratios will be blank"
