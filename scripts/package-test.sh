#!/usr/bin/env bash
# The package in a clean system: a fresh Debian 12 (bookworm) root made by debootstrap, without
# Swift, where `apt-get install ./syncfs_….deb` resolves the dependencies from Debian; then, in a
# chroot with /dev/fuse bound in: `syncfs-mount --version`, `init`, `serve` on loopback,
# `token create`, two mounts of the served container and a file written in one appearing, equal,
# in the other (and in a third mount made by `mount -t fuse.syncfs`, the package's helper);
# `unmount`, the server stopped, and `dpkg -r syncfs` removing every file of the package while
# the users' data stays. Any step that fails fails the test, naming the step.
#   scripts/package-test.sh [DEB]      (default: the newest dist/syncfs_*.deb; as root)
# Cached in SYNCFS_PACKAGE_TEST_CACHE (default /var/cache/syncfs-package-test): the debootstrapped
# root (made once, ~80 s and ~60 MB of downloads; copied afresh for each run) and the .debs apt
# fetched, so a rerun downloads only the package lists. The mirror is the one apt uses on this
# machine (its bookworm entry in /etc/apt/sources.list*), or SYNCFS_DEBIAN_MIRROR.
# The chroot runs in its own mount and PID namespaces: whatever happens, its mounts and processes
# end with it, and the trap checks that none is left.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() {
    echo "package-test.sh: FAILED: $*" >&2
    exit 1
}
deb="${1:-$(find dist -maxdepth 1 -name 'syncfs_*.deb' -printf '%T@ %p\n' 2>/dev/null | sort -n | tail -n 1 | cut -d' ' -f2-)}"
if [ -z "$deb" ] || [ ! -f "$deb" ]; then fail "no package: run scripts/package.sh first (or give the .deb)"; fi
[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap, chroot, mounts)"
[ -c /dev/fuse ] || fail "no /dev/fuse on this machine"
command -v debootstrap >/dev/null || fail "debootstrap is not installed (scripts/install-deps.sh --test)"
version=$(dpkg-deb -f "$deb" Version)
expected_version="${version//\~/-}"

suite=bookworm
cache="${SYNCFS_PACKAGE_TEST_CACHE:-/var/cache/syncfs-package-test}"
# The Debian mirror of apt's bookworm entry (one-line or deb822 format), not its security one.
apt_mirror() {
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
        | awk -v suite="$suite" '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/ && $(i + 1) == suite) { print $i; exit } }'
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v suite="$suite" '
        BEGIN { RS = ""; FS = "\n" }
        {
            uris = ""; suites = ""
            for (i = 1; i <= NF; i++) {
                if ($i ~ /^URIs:/) uris = substr($i, 6)
                if ($i ~ /^Suites:/) suites = " " substr($i, 8) " "
            }
            if (index(suites, " " suite " ") > 0) { split(uris, list, " "); print list[1]; exit }
        }'
}
mirror="${SYNCFS_DEBIAN_MIRROR:-$(apt_mirror | head -n 1)}"
[ -n "$mirror" ] || fail "no $suite entry in /etc/apt/sources.list*: set SYNCFS_DEBIAN_MIRROR"

# ---- The clean root, made once. A half-made one (interrupted) is made again.
base="$cache/$suite-minbase"
archives="$cache/apt-archives"
mkdir -p "$cache" "$archives"
if [ "$(cat "$base.ready" 2>/dev/null)" != "$mirror" ]; then
    echo "package-test.sh: debootstrap $suite from $mirror into $base"
    rm -rf --one-file-system "$base" "$base.tmp" "$base.ready"
    debootstrap --variant=minbase --arch="$(dpkg --print-architecture)" "$suite" "$base.tmp" "$mirror" \
        >"$cache/debootstrap.log" 2>&1 || fail "debootstrap (log: $cache/debootstrap.log)"
    rm -f "$base.tmp"/var/cache/apt/archives/*.deb
    mv "$base.tmp" "$base"
    echo "$mirror" >"$base.ready"
fi

# ---- This run's root: a fresh copy. One left by a run that was killed is removed first.
root="$cache/run"
unshare_pid=""
mounts_below() { awk -v root="$1" 'index($2, root "/") == 1 || $2 == root { print $2 }' /proc/mounts; }
remove_root() {
    # Never delete through a mount that is still there (/dev would be the host's).
    local mountpoint
    for mountpoint in $(mounts_below "$root" | sort -r); do umount -l "$mountpoint" || true; done
    if [ -n "$(mounts_below "$root")" ]; then
        echo "package-test.sh: still mounted below $root, not removing it: $(mounts_below "$root")" >&2
        return 1
    fi
    rm -rf --one-file-system "$root"
}
cleanup() {
    local status=$?
    if [ -n "$unshare_pid" ] && kill -0 "$unshare_pid" 2>/dev/null; then
        kill -KILL "$unshare_pid" 2>/dev/null || true
        wait "$unshare_pid" 2>/dev/null || true
    fi
    if [ -d "$root" ]; then
        # Keep apt's downloads for the next run.
        cp -n "$root"/var/cache/apt/archives/*.deb "$archives/" 2>/dev/null || true
        remove_root || status=1
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
[ ! -e "$root" ] || remove_root || fail "a previous run's root $root could not be removed"
cp -a "$base" "$root"
cp "$archives"/*.deb "$root/var/cache/apt/archives/" 2>/dev/null || true
cp "$deb" "$root/root/"
touch "$root/dev/fuse"

# ---- What runs inside, as root of the clean system.
cat >"$root/root/package-test-inside.sh" <<'INSIDE'
set -euo pipefail
deb="$1"
expected_version="$2"
step=""
serve_pid=""
step() {
    step="$*"
    echo "package-test: $step"
}
fail() {
    echo "package-test.sh: FAILED: $step: $*" >&2
    exit 1
}
# wait_for SECONDS WHAT COMMAND…: polls COMMAND until it succeeds, failing after SECONDS.
wait_for() {
    local seconds="$1" what="$2"
    local deadline=$((SECONDS + seconds))
    shift 2
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || fail "$what: not within ${seconds}s"
        sleep 0.1
    done
}
is_mounted() { grep -qs " $1 fuse" /proc/mounts; }
finish() {
    local status=$?
    for mountpoint in /mnt/a /mnt/b /mnt/c; do
        if is_mounted "$mountpoint"; then
            syncfs-mount unmount "$mountpoint" >/dev/null 2>&1 || umount -l "$mountpoint" || true
        fi
    done
    if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
        kill -TERM "$serve_pid"
        wait "$serve_pid" || true
    fi
    if [ "$status" -ne 0 ]; then
        for log in /root/serve.log /var/lib/package-test/*/*.log; do
            [ -f "$log" ] || continue
            echo "---- $log (last 40 lines)" >&2
            tail -n 40 "$log" >&2
        done
    fi
    exit "$status"
}
trap finish EXIT
export DEBIAN_FRONTEND=noninteractive
cd /root

step "no Swift toolchain in the clean root"
[ ! -e /opt/swift ] || fail "/opt/swift exists"
! command -v swift >/dev/null || fail "swift is on PATH: $(command -v swift)"

step "apt-get install ./$deb (dependencies from Debian)"
apt-get update -qq || fail "apt-get update"
apt-get install -y -q --no-install-recommends "./$deb" >/root/apt.log 2>&1 || { cat /root/apt.log >&2; fail "apt-get install"; }
dpkg-query -W -f='${db:Status-Status}' syncfs | grep -qx installed || fail "syncfs is not installed"

step "after the install: no Swift toolchain, no Swift library anywhere, none loaded"
[ ! -e /opt/swift ] || fail "/opt/swift exists"
! command -v swift >/dev/null || fail "swift is on PATH: $(command -v swift)"
swift_libraries=$(find / -xdev \( -name 'libswift*.so*' -o -name 'libFoundation*.so*' -o -name 'libdispatch.so*' \) -print)
[ -z "$swift_libraries" ] || fail "Swift libraries in the root: $swift_libraries"
libraries=$(ldd /usr/bin/syncfs-mount) || fail "ldd /usr/bin/syncfs-mount"
! grep -qiE 'swift|Foundation|dispatch' <<<"$libraries" || fail "the binary loads Swift libraries: $libraries"
! grep -q 'not found' <<<"$libraries" || fail "libraries missing: $libraries"

step "syncfs-mount --version"
version=$(syncfs-mount --version) || fail "exit $?"
[ "$version" = "$expected_version" ] || fail "printed '$version', expected '$expected_version'"

step "installed files: helper, units, man pages, completions, docs"
[ "$(readlink -f /sbin/mount.fuse.syncfs)" = /usr/bin/syncfs-mount ] || fail "/sbin/mount.fuse.syncfs"
grep -q '^ExecStart=/usr/bin/syncfs-mount ' /lib/systemd/system/syncfs@.service || fail "system unit"
grep -q '^ExecStart=/usr/bin/syncfs-mount ' /usr/lib/systemd/user/syncfs@.service || fail "user unit"
for file in /usr/share/man/man1/syncfs-mount.1.gz /usr/share/man/man1/syncfs-mount-mount.1.gz \
    /usr/share/man/man5/syncfs-fstab.5.gz /usr/share/bash-completion/completions/syncfs-mount \
    /usr/share/doc/syncfs/copyright /usr/share/doc/syncfs/changelog.gz; do
    [ -s "$file" ] || fail "$file is missing or empty"
done

step "syncfs-mount init"
init_output=$(syncfs-mount init /srv/local-container) || fail "exit $?"
if [ -z "$init_output" ] || [ ! -d /srv/local-container ]; then fail "no container made (output: $init_output)"; fi

step "syncfs-mount serve on loopback"
mkdir -p /srv/syncfs
syncfs-mount serve --root /srv/syncfs --listen 127.0.0.1:0 >/root/serve.out 2>/root/serve.log &
serve_pid=$!
serving() {
    kill -0 "$serve_pid" 2>/dev/null || fail "serve exited (log above)"
    grep -q '^listening on http://127.0.0.1:[0-9]*$' /root/serve.out
}
wait_for 60 "the line 'listening on …'" serving
url="$(sed -n 's/^listening on //p' /root/serve.out)/team"

step "syncfs-mount token create"
(umask 077 && syncfs-mount token create --root /srv/syncfs --container team --label package-test >/root/team.token) \
    || fail "exit $?"
grep -q . /root/team.token || fail "no token printed"

step "two mounts of $url"
mkdir -p /mnt/a /mnt/b
for side in a b; do
    syncfs-mount mount "$url" "/mnt/$side" --token-file /root/team.token --state-dir "/var/lib/package-test/$side" \
        || fail "mount /mnt/$side: exit $?"
    is_mounted "/mnt/$side" || fail "/mnt/$side is not a FUSE mount after mount returned"
done

step "a file written in mount A appears, equal, in mount B"
head -c 300000 /dev/urandom >/mnt/a/package-test.bin
echo "written in A" >/mnt/a/hello.txt
syncfs-mount sync /mnt/a --timeout 60 || fail "sync /mnt/a: exit $?"
wait_for 60 "hello.txt in /mnt/b" test -e /mnt/b/hello.txt
cmp /mnt/a/hello.txt /mnt/b/hello.txt || fail "hello.txt differs"
wait_for 60 "package-test.bin in /mnt/b" test -e /mnt/b/package-test.bin
cmp /mnt/a/package-test.bin /mnt/b/package-test.bin || fail "package-test.bin differs"

step "a third mount, made by mount(8) through /sbin/mount.fuse.syncfs, has the file"
mkdir -p /mnt/c
mount -t fuse.syncfs "$url" /mnt/c -o "token_file=/root/team.token,state_dir=/var/lib/package-test/c" \
    || fail "mount -t fuse.syncfs: exit $?"
is_mounted /mnt/c || fail "/mnt/c is not a FUSE mount after mount(8) returned"
wait_for 60 "package-test.bin in /mnt/c" test -e /mnt/c/package-test.bin
cmp /mnt/a/package-test.bin /mnt/c/package-test.bin || fail "package-test.bin differs in /mnt/c"

step "unmount all three"
for side in a b c; do
    syncfs-mount unmount "/mnt/$side" || fail "unmount /mnt/$side: exit $?"
    ! is_mounted "/mnt/$side" || fail "/mnt/$side is still mounted"
done

step "stop serve"
kill -TERM "$serve_pid"
serve_status=0
wait "$serve_pid" || serve_status=$?
serve_pid=""
[ "$serve_status" -eq 0 ] || fail "serve exited $serve_status after SIGTERM"

step "dpkg -r syncfs removes the package and leaves the users' data"
echo 'CONTAINER=/srv/local-container' >/etc/syncfs/mounts/users.conf
mapfile -t package_files < <(dpkg -L syncfs | while read -r path; do [ -d "$path" ] || echo "$path"; done)
[ "${#package_files[@]}" -gt 10 ] || fail "dpkg -L syncfs lists only ${#package_files[@]} files"
dpkg -r syncfs >/root/dpkg-remove.log 2>&1 || { cat /root/dpkg-remove.log >&2; fail "dpkg -r: exit $?"; }
for path in "${package_files[@]}"; do
    if [ -e "$path" ] || [ -L "$path" ]; then fail "$path is still there"; fi
done
for path in /srv/local-container /srv/syncfs/team /var/lib/package-test/a /root/team.token \
    /etc/syncfs/mounts/users.conf; do
    [ -e "$path" ] || fail "$path (the users' data) was removed"
done
echo "package-test: all steps passed"
INSIDE

# ---- Run it: a mount and a PID namespace of its own (--kill-child: they die with this script).
mounts_and_run() {
    set -e
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --make-rslave "$root/sys"
    mount --bind /dev/fuse "$root/dev/fuse"
    mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 /bin/bash /root/package-test-inside.sh "$(basename "$deb")" "$expected_version"
}
export root deb expected_version
export -f mounts_and_run
started=$SECONDS
unshare --mount --propagation private --pid --fork --kill-child -- bash -c mounts_and_run &
unshare_pid=$!
status=0
wait "$unshare_pid" || status=$?
unshare_pid=""
[ -z "$(mounts_below "$root")" ] || fail "mounts left below $root: $(mounts_below "$root")"
[ "$status" -eq 0 ] || fail "the clean-root test (exit $status; the failed step is above)"
echo "package-test.sh: $deb passed in a clean $suite root ($((SECONDS - started)) s)"
