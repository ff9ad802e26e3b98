import Foundation
import Glibc
import Testing

/// Tree walks answer the same on a mount as on a plain directory whichever way their listings
/// came: a walk that only descends gets names only (`ReaddirPlusReaders`), one that
/// stats gets attributes after its first folder, and a walk after another reads the listings the
/// kernel kept from it. Each walk is a new process on a freshly mounted (cold) folder, then again
/// warm; every output must equal the plain directory's.
@Suite(.serialized)
struct TreeWalkTest {
    /// Each walk: a name and a shell command run in the folder's root.
    static let walks: [(name: String, command: String)] = [
        ("find (names only)", "find . | LC_ALL=C sort"),
        // `find` filters by the listing's entry types (d_type), without a stat.
        (
            "find -type f, -type l",
            "find . -type f -printf 'file %p\\n' -o -type l -printf 'link %p\\n' | LC_ALL=C sort"
        ),
        ("find -printf (stats every name)", "find . ! -type d -printf '%P|%y|%s|%m|%T@|%l\\n' | LC_ALL=C sort"),
        ("find folders", "find . -mindepth 1 -type d -printf '%P|%m|%T@\\n' | LC_ALL=C sort"),
        (
            "ls -lR", "LC_ALL=C ls -lRn --time-style=+%s . | awk '$1 ~ /^[-l]/ {print $1, $5, $6, $7, $8, $9}'"
        ),
        ("du -ab of files", "du -ab --apparent-size . | LC_ALL=C sort -k2 | awk '$2 ~ /f[0-9]+$/'"),
        ("stat of the listing", "for f in d1/*; do stat -c '%n|%s|%a|%Y' \"$f\"; done"),
    ]

    @Test func walksAnswerAsOnAPlainDirectoryColdAndWarm() throws {
        let plain = try TestFolder.make(.plain)
        defer { plain.tearDown() }
        let mount = try TestFolder.make(.mount)
        defer { mount.tearDown() }
        for folder in [plain, mount] { try Self.buildTree(in: folder.root) }
        try mount.unmount()
        try mount.remount()

        // Cold: the walks in this order, each a new process; then all again, warm.
        for round in ["cold", "warm"] {
            for walk in Self.walks {
                let expected = ModelProcess.run(["sh", "-c", walk.command], cwd: plain.root)
                let actual = ModelProcess.run(["sh", "-c", walk.command], cwd: mount.root)
                try #require(
                    expected.ok && !expected.stdout.isEmpty, "\(walk.name) on the plain directory: \(expected)")
                #expect(actual.ok, "\(round) \(walk.name): \(actual)")
                if actual.stdout != expected.stdout {
                    let wanted = expected.stdout.split(separator: "\n")
                    let got = actual.stdout.split(separator: "\n")
                    let difference = zip(wanted, got).first { $0 != $1 }.map { "\($0.1) instead of \($0.0)" }
                    let message =
                        "\(round) \(walk.name): \(got.count) lines, expected \(wanted.count); first difference: "
                        + (difference ?? "a missing tail")
                    Issue.record(Comment(rawValue: message))
                }
            }
        }
    }

    /// Three folders of 150 files with a subfolder of 40 each, and symlinks; fixed times
    /// (folders last, so creating their entries does not move them).
    static func buildTree(in root: String) throws {
        var folders: [String] = []
        var index = 0
        for top in 1...3 {
            let folder = root + "/d\(top)"
            let inner = folder + "/sub"
            try makeDirectory(folder)
            try makeDirectory(inner)
            folders += [inner, folder]
            for (directory, count) in [(folder, 150), (inner, 40)] {
                for _ in 0..<count {
                    index += 1
                    let path = directory + "/f\(index)"
                    try writeFile(
                        path, String(repeating: "x", count: index % 300), mode: index % 7 == 0 ? 0o755 : 0o644)
                    try setTimes(path, seconds: 1_700_000_000 + index)
                }
            }
            try makeSymlink(target: "sub/f\(index)", at: folder + "/link")
            try setTimes(folder + "/link", seconds: 1_650_000_000, followingLinks: false)
        }
        for folder in folders { try setTimes(folder, seconds: 1_600_000_000) }
    }

    static func setTimes(_ path: String, seconds: Int, followingLinks: Bool = true) throws {
        let times = [timespecOf(seconds: seconds, nanoseconds: 0), timespecOf(seconds: seconds, nanoseconds: 0)]
        guard utimensat(AT_FDCWD, path, times, followingLinks ? 0 : AT_SYMLINK_NOFOLLOW) == 0 else {
            throw TestFolderError(message: "utimensat \(path): \(errnoName(errno))")
        }
    }
}
