#!/usr/bin/env bash
# Installs SyncFS into the system (called by scripts/setup.sh; safe to run again):
#   scripts/install-system.sh BINARY [--enable-unit MOUNTPOINT CONTAINER]
# As root: BINARY at /usr/local/bin/syncfs-mount, mount(8)'s helper /sbin/mount.fuse.syncfs (a
# symlink to it), the system unit /etc/systemd/system/syncfs@.service and the user unit
# /etc/systemd/user/syncfs@.service. As another user: BINARY at ~/.local/bin/syncfs-mount and the
# user unit in ~/.config/systemd/user/ (naming that binary); what needs root is printed, not done.
# Units are not enabled unless --enable-unit: then the mount configuration "default" is written
# (MOUNTPOINT, CONTAINER) and syncfs@default is enabled (started at the next boot or login).
set -euo pipefail
cd "$(dirname "$0")/.."
binary="$1"
shift
enable_unit=""
if [ "${1:-}" = "--enable-unit" ]; then
    enable_unit=yes
    mountpoint="$(realpath -m "$2")"
    container="$3"
    case "$container" in https://*) ;; *) container="$(realpath -m "$container")" ;; esac
fi

if [ "$(id -u)" -eq 0 ]; then
    bin_dir=/usr/local/bin
    install -d -m 0755 "$bin_dir" /etc/systemd/system /etc/systemd/user /etc/syncfs/mounts
    install -m 0755 -o root -g root "$binary" "$bin_dir/syncfs-mount"
    helper=/sbin/mount.fuse.syncfs
    if [ -e "$helper" ] && [ ! -L "$helper" ]; then
        echo "not replacing $helper: it is not a symlink (remove it to let mount -t fuse.syncfs use SyncFS)"
    else
        ln -sfn "$bin_dir/syncfs-mount" "$helper"
    fi
    install -m 0644 dist/systemd/system/syncfs@.service /etc/systemd/system/syncfs@.service
    install -m 0644 dist/systemd/user/syncfs@.service /etc/systemd/user/syncfs@.service
    config_dir=/etc/syncfs/mounts
    systemctl=(systemctl)
    echo "installed $bin_dir/syncfs-mount, $helper, /etc/systemd/system/syncfs@.service and /etc/systemd/user/syncfs@.service"
else
    bin_dir="$HOME/.local/bin"
    unit_dir="${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user"
    config_dir="${XDG_CONFIG_HOME:-$HOME/.config}/syncfs/mounts"
    install -d -m 0755 "$bin_dir" "$unit_dir"
    install -d -m 0700 "$config_dir"
    install -m 0755 "$binary" "$bin_dir/syncfs-mount"
    sed "s|/usr/local/bin/syncfs-mount|$bin_dir/syncfs-mount|g" dist/systemd/user/syncfs@.service \
        >"$unit_dir/syncfs@.service.tmp"
    mv "$unit_dir/syncfs@.service.tmp" "$unit_dir/syncfs@.service"
    systemctl=(systemctl --user)
    echo "installed $bin_dir/syncfs-mount and $unit_dir/syncfs@.service"
    echo "not installed (needs root; run scripts/setup.sh with sudo for them): /usr/local/bin/syncfs-mount," \
        "the mount(8) helper /sbin/mount.fuse.syncfs (so no fstab lines), the system unit"
fi

have_systemd=""
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    have_systemd=yes
    "${systemctl[@]}" daemon-reload 2>/dev/null || echo "could not reload systemd (${systemctl[*]} daemon-reload)"
fi
if [ -n "$enable_unit" ]; then
    config="$config_dir/default.conf"
    if [ ! -e "$config" ]; then
        umask 077
        printf 'CONTAINER=%s\nMOUNTPOINT=%s\nOPTIONS=\n' "$container" "$mountpoint" >"$config"
        echo "wrote the mount configuration $config"
    fi
    if [ -n "$have_systemd" ]; then
        "${systemctl[@]}" enable syncfs@default.service
        echo "enabled syncfs@default: systemd mounts $mountpoint at the next $([ "$(id -u)" -eq 0 ] && echo boot || echo login)"
    else
        echo "systemd is not running here: syncfs@default is not enabled"
    fi
else
    echo "units installed, not enabled (enable one with: ${systemctl[*]} enable syncfs@NAME, see doc/CLI.md)"
fi
