#!/usr/bin/env bash
# Builds the Debian package dist/syncfs_VERSION_amd64.deb: syncfs-mount built for release with the
# Swift runtime and Foundation linked in statically (--static-swift-stdlib) and stripped, so the
# package needs no Swift toolchain, only Debian's libraries (dependencies from dpkg-shlibdeps).
#   scripts/package.sh [--no-build]
# It installs what scripts/setup.sh installs as root (doc/DEPLOY.md, "Installing the package"):
# /usr/bin/syncfs-mount, mount(8)'s helper /sbin/mount.fuse.syncfs, the systemd units (not
# enabled), the man pages, the bash/zsh/fish completions and the docs in /usr/share/doc/syncfs.
# The build has its own scratch path (.build-release-static), so debug builds stay as they are;
# --no-build packages the binary already there. VERSION is Sources/syncfs-mount/Version.swift's,
# with "-" written "~" (0.1.0-dev is 0.1.0~dev, which dpkg sorts before the release 0.1.0).
# Prints the package's path on its last line. Needs dpkg-dev, binutils and lintian
# (scripts/install-deps.sh --test); lintian's findings fail the build unless
# dist/debian/lintian-overrides explains them.
set -euo pipefail
cd "$(dirname "$0")/.."
build=yes
case "${1:-}" in
"") ;;
--no-build) build="" ;;
*)
    echo "usage: scripts/package.sh [--no-build]" >&2
    exit 64
    ;;
esac
fail() {
    echo "package.sh: $*" >&2
    exit 1
}
scratch=.build-release-static
maintainer="SyncFS maintainers <maintainers@users.noreply.a-seed-37bc197c.example>"
architecture=$(dpkg --print-architecture)

if [ -n "$build" ]; then
    # Linked with BIND_NOW (full RELRO, as Debian's hardening flags ask); only the link step
    # depends on it.
    swift build -c release --static-swift-stdlib --product syncfs-mount --scratch-path "$scratch" \
        -Xlinker -z -Xlinker now
fi
built="$scratch/release/syncfs-mount"
[ -x "$built" ] || fail "no $built: build it first (without --no-build)"

# ---- The version, from the binary's own source; the built binary must say the same.
version=$(sed -n 's/^ *static let current = "\(.*\)"$/\1/p' Sources/syncfs-mount/Version.swift)
[ -n "$version" ] || fail "no version in Sources/syncfs-mount/Version.swift"
[ "$("$built" --version)" = "$version" ] || fail "$built --version is not $version: rebuild"
package_version="${version//-/\~}"

# ---- Every package linked in statically is named in the copyright file.
while read -r pin; do
    grep -qE -- "(^|[[:space:],(])$pin([[:space:],;)]|\$)" dist/debian/copyright \
        || fail "dist/debian/copyright does not name $pin (pinned in Package.resolved): add it with its licence"
done < <(sed -n 's/^ *"identity" : "\(.*\)",$/\1/p' Package.resolved)

# ---- Staging: the package's files as they will be installed.
stage="$scratch/package/syncfs_${package_version}_$architecture"
rm -rf "$stage"
install -d -m 0755 "$stage/DEBIAN" "$stage/usr/bin" "$stage/sbin" "$stage/lib/systemd/system" \
    "$stage/usr/lib/systemd/user" "$stage/etc/syncfs/mounts" \
    "$stage/usr/share/man/man1" "$stage/usr/share/man/man5" "$stage/usr/share/man/man8" \
    "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" \
    "$stage/usr/share/fish/vendor_completions.d" "$stage/usr/share/doc/syncfs/examples" \
    "$stage/usr/share/lintian/overrides"
binary="$stage/usr/bin/syncfs-mount"
install -m 0755 "$built" "$binary"
# As dh_strip does for an executable: symbols and notes out; the Swift metadata (its own sections)
# stays, and everything below runs the stripped binary.
strip --remove-section=.comment --remove-section=.note "$binary"
# No Swift library may be left to load: the runtime and Foundation are inside.
if ldd "$binary" | grep -E 'swift|Foundation|dispatch|BlocksRuntime|not found'; then
    fail "$binary still needs the libraries above; the package would need a Swift toolchain"
fi
# mount -t fuse.syncfs (and fstab) run this helper; an absolute link from /sbin into /usr.
ln -s /usr/bin/syncfs-mount "$stage/sbin/mount.fuse.syncfs"

# The units, naming the installed binary.
for scope in system user; do
    target="$stage/lib/systemd/system/syncfs@.service"
    [ "$scope" = user ] && target="$stage/usr/lib/systemd/user/syncfs@.service"
    sed -e 's|/usr/local/bin/syncfs-mount|/usr/bin/syncfs-mount|g' \
        -e 's|(installed by scripts/setup.sh, not|(installed by the syncfs package, not|' \
        -e 's|^Description=.*|&\nDocumentation=man:syncfs-fstab(5) man:syncfs-mount-mount(1)|' \
        -e 's|^# See doc/CLI.md, "systemd".|# See /usr/share/doc/syncfs/CLI.md.gz, "systemd".|' \
        "dist/systemd/$scope/syncfs@.service" >"$target"
    chmod 0644 "$target"
    if grep -q /usr/local "$target" || ! grep -q '^ExecStart=/usr/bin/syncfs-mount ' "$target"; then
        fail "$target does not run /usr/bin/syncfs-mount"
    fi
done

# Man pages: section 1 from the binary, section 5 from dist/man (scripts/gen-man.sh), compressed
# as Debian installs them; mount.fuse.syncfs(8) is syncfs-fstab(5), which describes it.
man_dir="$scratch/package/man"
rm -rf "$man_dir"
scripts/gen-man.sh "$binary" "$man_dir" >/dev/null
for page in "$man_dir"/*.1 "$man_dir"/*.5; do
    name=$(basename "$page")
    gzip -9n <"$page" >"$stage/usr/share/man/man${name##*.}/$name.gz"
done
printf '.so man5/syncfs-fstab.5\n' | gzip -9n >"$stage/usr/share/man/man8/mount.fuse.syncfs.8.gz"

# Completions, where Debian's bash-completion, zsh and fish look for a package's.
# bash-completion sources its files: no #! line.
"$binary" --generate-completion-script bash | sed '1{/^#!/d}' >"$stage/usr/share/bash-completion/completions/syncfs-mount"
"$binary" --generate-completion-script zsh >"$stage/usr/share/zsh/vendor-completions/_syncfs-mount"
"$binary" --generate-completion-script fish >"$stage/usr/share/fish/vendor_completions.d/syncfs-mount.fish"

# Docs: the copyright file, the changelog (Debian's format, from CHANGELOG.md), the user's
# documents and the mount configuration example of the units.
doc="$stage/usr/share/doc/syncfs"
install -m 0644 dist/debian/copyright "$doc/copyright"
changelog_date=$(git log -1 --format=%aD -- CHANGELOG.md 2>/dev/null || true)
[ -n "$changelog_date" ] || changelog_date=$(date -R)
release_dates=""
while read -r heading; do
    added=$(git log --reverse --format=%aD -S"## $heading" -- CHANGELOG.md 2>/dev/null | head -n 1)
    [ -z "$added" ] || release_dates+="$heading=$added;"
done < <(sed -n 's/^## \([0-9][^ ]*\)$/\1/p' CHANGELOG.md)
awk -v version="$package_version" -v maintainer="$maintainer" -v date="$changelog_date" \
    -v dates="$release_dates" -f scripts/debian-changelog.awk CHANGELOG.md | gzip -9n >"$doc/changelog.gz"
for document in README.md doc/CLI.md doc/DEPLOY.md doc/SEMANTICS.md doc/SECURITY.md doc/CRYPTO.md \
    doc/FORMATS.md doc/PROTOCOL.md; do
    name=$(basename "$document")
    gzip -9n <"$document" >"$doc/$name.gz"
done
install -m 0644 dist/systemd/example.conf "$doc/examples/mount.conf"
install -m 0644 dist/debian/lintian-overrides "$stage/usr/share/lintian/overrides/syncfs"

# ---- Control files.
install -m 0755 dist/debian/postinst dist/debian/postrm "$stage/DEBIAN/"
# Dependencies: the shared libraries the binary loads, with the versions their packages' shlibs
# files ask for (dpkg-shlibdeps wants a debian/control to read: a throwaway one). fusermount3
# (unmounting, mounts by users other than root) is fuse3's, which comes from the same source as
# libfuse3-3: the same minimum version.
shlibs_dir="$scratch/package/shlibs"
rm -rf "$shlibs_dir"
mkdir -p "$shlibs_dir/debian"
printf 'Source: syncfs\n\nPackage: syncfs\nArchitecture: any\n' >"$shlibs_dir/debian/control"
shlib_depends=$(cd "$shlibs_dir" && dpkg-shlibdeps -O "$OLDPWD/$binary" | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlib_depends" ] || fail "dpkg-shlibdeps found no dependencies of $binary"
fuse_version=$(grep -oE 'libfuse3-3 \(>= [^)]*\)' <<<"$shlib_depends" | sed 's/libfuse3-3 //') \
    || fail "the binary does not load libfuse3 ($shlib_depends)"
depends="fuse3 $fuse_version, $shlib_depends"
installed_size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<EOF
Package: syncfs
Version: $package_version
Architecture: $architecture
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $depends
Section: utils
Priority: optional
Description: synced folder for Linux over FUSE
 SyncFS mounts a container (a local directory or a SyncFS sync server) as an
 ordinary folder with FUSE: writes land in a local cache at once and are
 uploaded in content-defined, compressed chunks; every mount follows the
 container's change feed, merges concurrent edits by per-path rules and keeps
 conflict copies, so nothing is lost. Files from elsewhere appear as
 placeholders that download when first read.
 .
 The same command, syncfs-mount, runs the sync server (serve): users, roles,
 tokens, an audit log, end-to-end encrypted containers, on SQLite or on
 PostgreSQL and S3-compatible storage.
 .
 This package holds the command (the Swift runtime linked in), mount(8)'s
 helper for fstab lines (type fuse.syncfs), systemd units (not enabled), man
 pages and shell completions.
EOF
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
    >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"

# ---- The package: owned by root whatever user builds it; times from the last commit, so the
# same sources give the same package.
if epoch=$(git log -1 --format=%ct 2>/dev/null) && [ -n "$epoch" ]; then
    export SOURCE_DATE_EPOCH="$epoch"
    find "$stage" -exec touch -h -d "@$epoch" {} +
fi
mkdir -p dist
deb="dist/syncfs_${package_version}_$architecture.deb"
dpkg-deb --build --root-owner-group -Zxz "$stage" "$deb" >/dev/null

# ---- lintian: every finding is fixed or explained in dist/debian/lintian-overrides.
if command -v lintian >/dev/null; then
    if ! findings=$(lintian --fail-on error,warning,info --display-info "$deb" 2>&1); then
        echo "$findings" >&2
        fail "lintian has findings (above): fix them or explain each in dist/debian/lintian-overrides"
    fi
    [ -z "$findings" ] || echo "$findings"
else
    fail "lintian is not installed (scripts/install-deps.sh --test)"
fi
echo "binary: $(stat -c %s "$binary") bytes stripped ($(stat -c %s "$built") before); package: $(stat -c %s "$deb") bytes; installed: $installed_size KiB"
echo "$deb"
