#!/usr/bin/env bash
# Throwaway servers for the tests of the PostgreSQL + S3 backend, from Debian's packages:
#   - PostgreSQL 15: a cluster made with initdb, trust authentication, 127.0.0.1 only;
#   - Ceph RGW: one monitor, one OSD on memstore (in memory), radosgw, auth none, size-1 pools,
#     127.0.0.1 only, and one S3 user with throwaway keys.
# Nothing here is fit for real data: no passwords, no authentication between the Ceph daemons.
#
# Usage: scripts/services.sh start   start both (idempotent: if they run, only print the environment)
#        scripts/services.sh stop    stop them by PID and delete their data (idempotent)
#        scripts/services.sh env     print the environment of the running services
# `start` and `env` print lines to eval:  eval "$(scripts/services.sh start)"
#   SYNCFS_TEST_PG_URL, SYNCFS_TEST_S3_ENDPOINT, SYNCFS_TEST_S3_REGION,
#   SYNCFS_TEST_S3_ACCESS_KEY_ID, SYNCFS_TEST_S3_SECRET_ACCESS_KEY
# Progress and errors go to stderr. State lives in $SYNCFS_SERVICES_DIR (default
# /tmp/syncfs-services-$UID).
set -euo pipefail
# `set -e` also inside command substitutions ($(start_ceph ...)).
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
dir="${SYNCFS_SERVICES_DIR:-/tmp/syncfs-services-$(id -u)}"
pgbin=/usr/lib/postgresql/15/bin
log() { echo "services: $*" >&2; }

# Every PID file this script's daemons write.
pid_files() {
    for name in rgw osd.0 mon.a; do [ -f "$dir/run/$name.pid" ] && echo "$dir/run/$name.pid"; done
    [ -f "$dir/pg/postmaster.pid" ] && echo "$dir/pg/postmaster.pid"
    return 0
}

# Whether a PID runs; a zombie (exited, not yet reaped by whoever adopted it) counts as stopped.
alive() {
    [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null || return 1
    local state
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$state" ] && [ "$state" != Z ]
}

running() {
    [ -f "$dir/env" ] || return 1
    for file in $dir/run/rgw.pid $dir/run/osd.0.pid $dir/run/mon.a.pid $dir/pg/postmaster.pid; do
        [ -f "$file" ] && alive "$(head -1 "$file")" || return 1
    done
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Waits up to $2 seconds for a command to succeed.
wait_for() {
    local what=$1 seconds=$2
    shift 2
    local deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then log "$what did not come up in ${seconds}s (logs in $dir)"; return 1; fi
        sleep 0.2
    done
}

install_packages() { scripts/install-deps.sh --services >&2; }

# PostgreSQL refuses to run as root: as root, the cluster belongs to the postgres user.
as_pg_user() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_postgres() {
    local port=$1
    mkdir -p "$dir/pg"
    [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$dir/pg"
    chmod 700 "$dir/pg"
    as_pg_user "$pgbin/initdb" -D "$dir/pg" -A trust -U postgres -E UTF8 --no-sync >"$dir/pg-init.log"
    as_pg_user "$pgbin/pg_ctl" -s -D "$dir/pg" -l "$dir/pg/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir/pg -c fsync=off -c max_connections=500" start >&2
}

ceph_conf() {
    local mon_port=$1 rgw_port=$2
    cat <<EOF
[global]
fsid = $(cat /proc/sys/kernel/random/uuid)
mon host = v2:127.0.0.1:$mon_port
public addr = 127.0.0.1
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
auth supported = none
# Without authentication there is no session key, so connections can only be "crc" (daemons such
# as radosgw default to "secure" towards the monitor and would never connect).
ms mon client mode = crc
ms mon cluster mode = crc
ms mon service mode = crc
ms client mode = crc
ms cluster mode = crc
ms service mode = crc
osd objectstore = memstore
memstore device bytes = 6442450944
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon allow pool size one = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
mon data = $dir/\$name
osd data = $dir/\$name
run dir = $dir/run
pid file = $dir/run/\$name.pid
admin socket = $dir/run/\$name.asok
log file = $dir/\$name.log
keyring = $dir/keyring
crash dir = $dir/crash
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$rgw_port
pid file = $dir/run/rgw.pid
rgw dns name = localhost
EOF
}

start_ceph() {
    local mon_port=$1 rgw_port=$2
    mkdir -p "$dir/run" "$dir/crash" "$dir/mon.a" "$dir/osd.0"
    ceph_conf "$mon_port" "$rgw_port" >"$dir/ceph.conf"
    local conf=(-c "$dir/ceph.conf")
    ceph-authtool --create-keyring "$dir/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
    local fsid
    fsid=$(sed -n 's/^fsid = //p' "$dir/ceph.conf")
    monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$dir/monmap" >/dev/null
    ceph-mon "${conf[@]}" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/keyring" >>"$dir/daemons.log" 2>&1
    ceph-mon "${conf[@]}" -i a >>"$dir/daemons.log" 2>&1
    wait_for "ceph-mon" 30 ceph "${conf[@]}" --connect-timeout 2 mon stat
    local uuid
    uuid=$(cat /proc/sys/kernel/random/uuid)
    ceph "${conf[@]}" osd new "$uuid" 0 >/dev/null
    ceph-osd "${conf[@]}" -i 0 --mkfs --osd-uuid "$uuid" >>"$dir/daemons.log" 2>&1
    ceph-osd "${conf[@]}" -i 0 >>"$dir/daemons.log" 2>&1
    wait_for "ceph-osd" 60 sh -c "ceph -c '$dir/ceph.conf' osd stat | grep -q '1 up'"
    radosgw "${conf[@]}" -n client.rgw >>"$dir/daemons.log" 2>&1
    wait_for "radosgw" 60 curl -sf "http://127.0.0.1:$rgw_port/"
    local key secret
    key=$(python3 -c 'import secrets; print("SYNCFSTEST" + secrets.token_hex(5).upper())')
    secret=$(python3 -c 'import secrets; print(secrets.token_urlsafe(30))')
    radosgw-admin "${conf[@]}" user create --uid=syncfs-test --display-name="SyncFS tests" \
        --access-key="$key" --secret-key="$secret" >/dev/null
    echo "$key $secret"
}

start() {
    if running; then cat "$dir/env"; return 0; fi
    # A half-started or crashed earlier run: clean it up first.
    stop_all
    install_packages
    # In a subshell so that `set -e` holds inside and any failure stops what did start.
    set +e
    (set -e; start_all)
    local status=$?
    set -e
    if [ "$status" -ne 0 ]; then
        log "start failed; stopping what started (logs were in $dir)"
        tail -n 20 "$dir"/*.log "$dir"/pg/server.log 2>/dev/null >&2 || true
        stop_all
        return 1
    fi
    cat "$dir/env"
}

start_all() {
    local started=$SECONDS
    mkdir -p "$dir"
    chmod 755 "$dir"
    local pg_port mon_port rgw_port
    pg_port=$(free_port)
    mon_port=$(free_port)
    rgw_port=$(free_port)
    start_postgres "$pg_port"
    log "PostgreSQL on 127.0.0.1:$pg_port after $((SECONDS - started))s"
    local keys
    keys=$(start_ceph "$mon_port" "$rgw_port")
    log "Ceph RGW on 127.0.0.1:$rgw_port after $((SECONDS - started))s"
    {
        echo "export SYNCFS_TEST_PG_URL=postgres://postgres@127.0.0.1:$pg_port/postgres"
        echo "export SYNCFS_TEST_S3_ENDPOINT=http://127.0.0.1:$rgw_port"
        echo "export SYNCFS_TEST_S3_REGION=default"
        echo "export SYNCFS_TEST_S3_ACCESS_KEY_ID=${keys%% *}"
        echo "export SYNCFS_TEST_S3_SECRET_ACCESS_KEY=${keys#* }"
    } >"$dir/env"
}

# Stops every daemon this script started, by the PIDs in their PID files, then deletes the data
# directory. The data is throwaway: PostgreSQL gets a fast shutdown (SIGINT), the Ceph daemons
# SIGTERM, and whatever still runs after 3 s gets SIGKILL.
stop_all() {
    local pids=()
    local file pid
    for file in $(pid_files); do
        pid=$(head -1 "$file" 2>/dev/null || true)
        alive "$pid" || continue
        pids+=("$pid")
        case "$file" in
        */postmaster.pid) kill -INT "$pid" 2>/dev/null || true ;;
        *) kill -TERM "$pid" 2>/dev/null || true ;;
        esac
    done
    local deadline=$((SECONDS + 3))
    for pid in "${pids[@]}"; do
        while alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
        if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    done
    for pid in "${pids[@]}"; do
        while alive "$pid"; do sleep 0.1; done
    done
    # Exited daemons stay zombies until the process that adopted them reaps them (in containers
    # an init that may take a couple of seconds): wait up to 5 s so none is listed afterwards.
    deadline=$((SECONDS + 5))
    for pid in "${pids[@]}"; do
        while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
    done
    rm -rf "$dir"
}

case "${1:-}" in
start) start ;;
stop) stop_all ;;
env)
    if running; then cat "$dir/env"; else log "not running (scripts/services.sh start)"; exit 1; fi
    ;;
*)
    echo "usage: scripts/services.sh start|stop|env" >&2
    exit 2
    ;;
esac
