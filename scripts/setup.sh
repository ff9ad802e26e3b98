#!/usr/bin/env bash
# One command on a fresh Debian machine: installs what is missing, builds SyncFS (release), and
# mounts a folder on the embedded default container.
#   scripts/setup.sh [MOUNTPOINT] [CONTAINER] [--enable-unit]
# Defaults: ~/SyncFS on the container ~/.local/share/syncfs/default-container.
set -euo pipefail
cd "$(dirname "$0")/.."
# ---- System integration: --enable-unit anywhere in the arguments also enables the unit.
enable_unit=()
positional=()
for argument in "$@"; do
    case "$argument" in
    --enable-unit) enable_unit=(--enable-unit) ;;
    *) positional+=("$argument") ;;
    esac
done
set -- "${positional[@]+"${positional[@]}"}"
# ---- end
mountpoint="${1:-$HOME/SyncFS}"
default_container="${XDG_DATA_HOME:-$HOME/.local/share}/syncfs/default-container"
container="${2:-$default_container}"
scripts/install-deps.sh
# Only the shipped command (not the benchmarks' syncfs-bench).
swift build -c release --product syncfs-mount
binary="$PWD/.build/release/syncfs-mount"
# ---- System integration: the binary at a stable path, mount(8)'s helper, systemd units
# (not enabled unless --enable-unit). See scripts/install-system.sh.
if [ "${#enable_unit[@]}" -gt 0 ]; then
    scripts/install-system.sh "$binary" --enable-unit "$mountpoint" "$container"
else
    scripts/install-system.sh "$binary"
fi
# ---- end

# ---- Man pages and shell completions (doc/CLI.md, "Man pages and completions") ----
# Section 1 generated from the built binary's own command definitions, section 5 (file formats,
# fstab and units) from dist/man. As root: system-wide locations;
# as a user: ~/.local/share (man finds ~/.local/share/man through PATH's ~/.local/bin, and
# bash-completion, zsh and fish read these user directories).
scripts/gen-man.sh "$binary" >/dev/null
if [ "$(id -u)" -eq 0 ]; then
    man_dir=/usr/local/share/man/man1
    man5_dir=/usr/local/share/man/man5
    bash_dir=/usr/share/bash-completion/completions
    zsh_dir=/usr/local/share/zsh/site-functions
    fish_dir=/usr/share/fish/vendor_completions.d
else
    data="${XDG_DATA_HOME:-$HOME/.local/share}"
    man_dir="$data/man/man1"
    man5_dir="$data/man/man5"
    bash_dir="$data/bash-completion/completions"
    zsh_dir="$data/zsh/site-functions"
    fish_dir="${XDG_CONFIG_HOME:-$HOME/.config}/fish/completions"
fi
mkdir -p "$man_dir" "$man5_dir" "$bash_dir"
install -m 0644 .build/man/*.1 "$man_dir/"
install -m 0644 .build/man/*.5 "$man5_dir/"
"$binary" --generate-completion-script bash >"$bash_dir/syncfs-mount"
# zsh and fish only where they are installed (their directories are theirs to make).
if command -v zsh >/dev/null; then
    mkdir -p "$zsh_dir"
    "$binary" --generate-completion-script zsh >"$zsh_dir/_syncfs-mount"
fi
if command -v fish >/dev/null; then
    mkdir -p "$fish_dir"
    "$binary" --generate-completion-script fish >"$fish_dir/syncfs-mount.fish"
fi
echo "Installed the man pages in $man_dir and $man5_dir and the completions (bash in $bash_dir)."
# ---- end of man pages and completions ----

mkdir -p "$mountpoint"
if grep -qs " $mountpoint fuse" /proc/mounts; then
    echo "$mountpoint is already mounted; unmount it with: $binary unmount $mountpoint"
    exit 0
fi
# The default container's parent is made here; a container path you give must have its parent.
[ "$container" != "$default_container" ] || mkdir -p -m 0700 "$(dirname "$container")"
"$binary" mount --create "$container" "$mountpoint"
echo "Your synced folder is $mountpoint. Unmount with: $binary unmount $mountpoint"
