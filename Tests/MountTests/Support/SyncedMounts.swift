import Foundation
import Glibc
import TestSupport
import Testing

/// Two SyncFS mounts of the same container directory: mount A and mount B, each a daemon of the
/// built binary with its own state directory and mount point (like two machines sharing a
/// container). The container lives in a temporary directory of its own (/tmp/syncfs-tests-XXXXXX).
///
///     try SyncedMounts.with(uploadDelay: 20) { mounts in
///         try writeFile(mounts.a.path("f"), "x")
///         #expect(waitUntil { try readText(mounts.b.path("f")) == "x" })
///     }
///
/// `tearDown` (always run by `with`) unmounts both daemons, whatever the test did, and removes the
/// temporary directories.
final class SyncedMounts: @unchecked Sendable {
    /// The directory holding the shared container.
    let baseDir: String
    /// The container both mounts sync with (with a server on `.postgresS3`, a path that does not
    /// exist: look at the container through `server`'s `holdsContainer`/`entryCount`).
    let containerPath: String
    let a: TestFolder
    let b: TestFolder
    /// With `overServer`: the `syncfs-mount serve` process both mounts reach the container through.
    let server: ServerProcess?

    private init(baseDir: String, containerPath: String, a: TestFolder, b: TestFolder, server: ServerProcess?) {
        self.baseDir = baseDir
        self.containerPath = containerPath
        self.a = a
        self.b = b
        self.server = server
    }

    /// Mounts A, then B, on a fresh container. `uploadDelayB` defaults to `uploadDelay`.
    /// `argumentsA` and `argumentsB` are appended to every `mount` of A and of B (e.g.
    /// `["--cache-size", "8M"]`), `environmentA`/`environmentB` added to A's/B's environment (`OutageSwitch`). `overServer`: the container is served by a `syncfs-mount serve`
    /// child process on loopback and both mount its URL with a token (`containerPath` is then the
    /// container's directory on the server's side). `overTLS`: the same over HTTPS with a
    /// self-signed certificate the mounts trust with `--ca-file`. `backend`: what that server
    /// serves from (`MountServerBackend`; `.postgresS3` makes a scratch database and bucket).
    static func make(
        uploadDelay: Int = 20, uploadDelayB: Int? = nil, argumentsA: [String] = [], argumentsB: [String] = [],
        environmentA: [String: String] = [:], environmentB: [String: String] = [:], overServer: Bool = false,
        overTLS: Bool = false, backend: MountServerBackend = .embedded
    ) throws -> SyncedMounts {
        umask(0o022)
        let base = try makeTemporaryDirectory("syncfs-tests")
        var container = base + "/container"
        var server: ServerProcess?
        do {
            var location = container
            var access: [String] = []
            if overServer || overTLS {
                let started = try ServerProcess.start(root: base + "/server", tls: overTLS, backend: backend)
                server = started
                access = ["--token-file", try started.createToken(container: "box")]
                if let tls = started.tls { access += ["--ca-file", tls.certificate] }
                location = started.url("box")
                container = started.root + "/box"
            } else {
                try makeDirectory(container)
            }
            let a = try TestFolder.make(
                .mount, sharedContainer: location,
                mountArguments: ["--upload-delay", String(uploadDelay)] + access + argumentsA,
                mountEnvironment: environmentA)
            do {
                let b = try TestFolder.make(
                    .mount, sharedContainer: location,
                    mountArguments: ["--upload-delay", String(uploadDelayB ?? uploadDelay)] + access + argumentsB,
                    mountEnvironment: environmentB)
                return SyncedMounts(baseDir: base, containerPath: container, a: a, b: b, server: server)
            } catch {
                a.tearDown()
                throw error
            }
        } catch {
            server?.tearDown()
            try? FileManager.default.removeItem(atPath: base)
            throw error
        }
    }

    /// Runs `body` on fresh mounts and always tears them down.
    static func with<R>(
        uploadDelay: Int = 20, uploadDelayB: Int? = nil, argumentsA: [String] = [], argumentsB: [String] = [],
        environmentA: [String: String] = [:], environmentB: [String: String] = [:], overServer: Bool = false,
        overTLS: Bool = false, backend: MountServerBackend = .embedded, _ body: (SyncedMounts) throws -> R
    ) throws -> R {
        let mounts = try make(
            uploadDelay: uploadDelay, uploadDelayB: uploadDelayB, argumentsA: argumentsA, argumentsB: argumentsB,
            environmentA: environmentA, environmentB: environmentB, overServer: overServer, overTLS: overTLS,
            backend: backend)
        defer { mounts.tearDown() }
        return try body(mounts)
    }

    /// Unmounts both (never leaves a mount behind) and removes the temporary directories.
    func tearDown() {
        a.tearDown()
        b.tearDown()
        server?.tearDown()
        if TestFolder.isMounted(a.root) || TestFolder.isMounted(b.root) {
            Issue.record("tearDown: a mount is left; keeping the container at \(containerPath)")
            return
        }
        try? FileManager.default.removeItem(atPath: baseDir)
    }

    /// The last lines of both daemons' logs, for failure messages.
    func logs(limit: Int = 3000) -> String {
        "---- daemon A log (\(a.logPath)):\n\(a.daemonLog(limit: limit))\n"
            + "---- daemon B log (\(b.logPath)):\n\(b.daemonLog(limit: limit))"
            + (server.map { "\n---- server log (\($0.logPath)):\n\($0.log(limit: limit))" } ?? "")
    }
}

/// Waits until the trees of A and B are identical (see `SyncedTree`) and returns that tree;
/// otherwise records the remaining differences (and both logs) as an issue and returns nil.
@discardableResult
func expectConverged(
    _ mounts: SyncedMounts, timeout: Double = 20, _ context: String,
    sourceLocation: SourceLocation = #_sourceLocation
) -> SyncedTree? {
    var last: [String] = []
    var converged: SyncedTree?
    _ = waitUntil(timeout: timeout) {
        // Cheap metadata first; contents only once the shapes agree.
        let shapeA = SyncedTree.snapshot(mounts.a.root, contents: false)
        let shapeB = SyncedTree.snapshot(mounts.b.root, contents: false)
        last = shapeA.differences(from: shapeB, labels: ("A", "B"))
        guard last.isEmpty else { return false }
        let treeA = SyncedTree.snapshot(mounts.a.root)
        let treeB = SyncedTree.snapshot(mounts.b.root)
        last = treeA.differences(from: treeB, labels: ("A", "B"))
        if last.isEmpty { converged = treeA }
        return last.isEmpty
    }
    if converged == nil {
        let differences = last.prefix(30).joined(separator: "\n")
        let logs = mounts.logs()
        Issue.record(
            "\(context): A and B did not converge within \(Int(timeout)) s; differences:\n\(differences)\n\(logs)",
            sourceLocation: sourceLocation)
    }
    return converged
}

// MARK: - The sync and status commands

/// `syncfs-mount status MOUNTPOINT --json` (doc/CLI.md). The fields that came with placeholders
/// are optional here, so a daemon that lacks one fails the test that needs it, not
/// every test that reads the queue.
struct MountSyncStatus: Decodable {
    struct Failing: Decodable {
        var fileID: String
        var path: String?
        var reason: String
        var attempts: Int
    }

    /// A download or upload in progress.
    struct Transfer: Decodable {
        var path: String
        /// `download` or `upload`.
        var direction: String
        var done: Int64
        var total: Int64
    }

    var pendingEntries: Int
    var pendingBytes: Int64
    var failing: [Failing]
    var lastContainerError: String?
    var bytesUploaded: Int64
    var encodedBytesUploaded: Int64
    var bytesDownloaded: Int64
    /// Whether the container is reachable.
    var online: Bool?
    /// The follower has applied everything the container had at its last look.
    var feedCaughtUp: Bool?
    /// Online, caught up and nothing queued.
    var upToDate: Bool?
    /// The disk holding the state directory is full (doc/SEMANTICS.md, "Full disk").
    var stateDiskFull: Bool?
    /// Files by state: `local`, `online`, `modified`, `pinned`.
    var files: [String: Int]?
    /// Bytes of downloaded and modified content in the state directory.
    var cachedBytes: Int64?
    var cacheBudget: Int64?
    var transfers: [Transfer]?
    /// Cached copies found damaged since the mount.
    var damagedCacheCopies: Int?
}

extension TestFolder {
    /// Runs `syncfs-mount sync ROOT --timeout S` (waits at most `timeout` + 60 s for it).
    func runSync(timeout: Double = 30) throws -> ModelProcessResult {
        ModelProcess.run(
            [try Self.binaryPath(), "sync", root, "--timeout", String(timeout)], timeout: timeout + 60)
    }

    /// Runs `syncfs-mount sync ROOT` and expects exit status 0; records the output and the
    /// daemon's log otherwise.
    @discardableResult
    func expectSync(timeout: Double = 30, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let result: ModelProcessResult
        do {
            result = try runSync(timeout: timeout)
        } catch {
            Issue.record("sync \(root): \(error)", sourceLocation: sourceLocation)
            return false
        }
        if result.ok { return true }
        Issue.record(
            "\(result)\n---- daemon log:\n\(daemonLog())", sourceLocation: sourceLocation)
        return false
    }

    /// Runs `syncfs-mount status ROOT --json` and decodes its line.
    func syncStatus() throws -> MountSyncStatus { try statusJSON(of: root) }

    /// Runs `syncfs-mount status PATH --json` and decodes its line as `T`.
    func statusJSON<T: Decodable>(of path: String) throws -> T {
        let result = ModelProcess.run([try Self.binaryPath(), "status", path, "--json"], timeout: 60)
        guard result.ok else { throw TestFolderError(message: "status \(path) failed: \(result)") }
        do {
            return try JSONDecoder().decode(T.self, from: Data(result.stdout.utf8))
        } catch {
            throw TestFolderError(message: "status \(path) printed \(result.stdout.debugDescription): \(error)")
        }
    }
}

/// `syncfs-mount status PATH --json` for a path inside a mount (doc/CLI.md).
struct PathSyncStatus: Decodable {
    struct Progress: Decodable {
        var done: Int64
        var total: Int64
    }

    var path: String
    /// `file`, `directory` or `symlink`.
    var kind: String
    /// As `user.syncfs.state`.
    var state: String
    /// `1`, `inherited` or `0` (see `PinnedValue`).
    var pinned: PinnedValue
    var size: Int64
    var localBytes: Int64
    var progress: Progress?
    var error: String?
    /// Folders: the files below by state.
    var files: [String: Int]?
}

/// The `pinned` field: doc/CLI.md writes its values as `1`, `inherited`, `0`, which does not say
/// whether `1` and `0` are JSON strings or numbers; both are taken (and booleans), as the text.
struct PinnedValue: Decodable, Equatable, CustomStringConvertible {
    var text: String
    var description: String { text }

    init(_ text: String) { self.text = text }

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            text = string
        } else if let number = try? container.decode(Int.self) {
            text = String(number)
        } else {
            text = try container.decode(Bool.self) ? "1" : "0"
        }
    }
}

extension TestFolder {
    /// Runs `syncfs-mount status PATH --json` and decodes its line. `path` is absolute.
    func pathStatus(_ path: String) throws -> PathSyncStatus { try statusJSON(of: path) }
}

// MARK: - Tree snapshots

/// Everything about a tree that syncs (see doc/SEMANTICS.md, "What syncs"), keyed by the path
/// relative to the root ("" is the root): kind, permission bits, size, symlink target, the whole
/// content, `user.` extended attributes, and the mtime of regular files (to the nanosecond).
/// Not compared: owner, atime, ctime, inode numbers, link counts and directory mtimes (local to
/// each mount).
struct SyncedTree {
    struct Entry {
        var kind: Character
        var mode: mode_t
        var size: Int64
        var target: String?
        /// Regular files, when taken with contents.
        var content: [UInt8]?
        var xattrs: [String: [UInt8]] = [:]
        /// Regular files only.
        var mtime: (seconds: Int, nanoseconds: Int)?
    }

    var entries: [String: Entry] = [:]
    /// Entries that could not be read.
    var problems: [String] = []

    var names: [String] { entries.keys.sorted() }

    static func snapshot(_ root: String, contents: Bool = true) -> SyncedTree {
        var tree = SyncedTree()
        tree.walk(root, relative: "", contents: contents)
        return tree
    }

    private mutating func walk(_ root: String, relative: String, contents: Bool) {
        let path = relative.isEmpty ? root : root + "/" + relative
        let label = relative.isEmpty ? "<root>" : relative
        do {
            let info = try lstatPath(path)
            var entry = Entry(
                kind: isDirectory(info) ? "d" : isRegular(info) ? "f" : isSymlink(info) ? "l" : "?",
                mode: permissions(info), size: Int64(info.st_size))
            if entry.kind == "l" {
                entry.target = try readLink(path)
            } else {
                for name in try listXattrs(path) where name.hasPrefix("user.") {
                    entry.xattrs[name] = try getXattr(path, name)
                }
            }
            if entry.kind == "f" {
                entry.mtime = (Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec))
                if contents {
                    let bytes = try readFile(path)
                    if Int64(bytes.count) != entry.size {
                        problems.append("\(label): read \(bytes.count) bytes but st_size is \(entry.size)")
                    }
                    entry.content = bytes
                }
            }
            entries[relative] = entry
            if entry.kind == "d" {
                for name in try listDirectory(path).sorted() {
                    walk(root, relative: relative.isEmpty ? name : relative + "/" + name, contents: contents)
                }
            }
        } catch {
            problems.append("\(label): \(error)")
        }
    }

    /// The differences between two snapshots, one line each (empty: identical).
    func differences(from other: SyncedTree, labels: (String, String) = ("A", "B")) -> [String] {
        let (left, right) = labels
        var lines = problems.map { "\(left): \($0)" } + other.problems.map { "\(right): \($0)" }
        for path in Set(entries.keys).union(other.entries.keys).sorted() {
            let name = path.isEmpty ? "<root>" : path
            guard let mine = entries[path] else {
                lines.append("\(name): only in \(right)")
                continue
            }
            guard let theirs = other.entries[path] else {
                lines.append("\(name): only in \(left)")
                continue
            }
            func compare<T: Equatable>(_ field: String, _ x: T, _ y: T) {
                if x != y { lines.append("\(name): \(field) \(left)=\(x) \(right)=\(y)") }
            }
            compare("kind", mine.kind, theirs.kind)
            compare("mode", String(mine.mode, radix: 8), String(theirs.mode, radix: 8))
            compare("size", mine.size, theirs.size)
            compare("symlink target", mine.target ?? "-", theirs.target ?? "-")
            func format(_ time: (seconds: Int, nanoseconds: Int)?) -> String {
                time.map { "\($0.seconds).\(String(format: "%09d", $0.nanoseconds))" } ?? "-"
            }
            compare("mtime", format(mine.mtime), format(theirs.mtime))
            compare("xattrs", mine.xattrs, theirs.xattrs)
            if let x = mine.content, let y = theirs.content, let offset = firstDifference(x, y) {
                lines.append("\(name): content differs from byte \(offset) (\(x.count) vs \(y.count) bytes)")
            }
        }
        return lines
    }
}

/// Whether two byte arrays are equal (memcmp: fast even in debug builds).
func sameBytes(_ x: [UInt8], _ y: [UInt8]) -> Bool {
    firstDifference(x, y) == nil
}

/// The offset of the first byte where `x` and `y` differ, or nil if they are equal.
func firstDifference(_ x: [UInt8], _ y: [UInt8]) -> Int? {
    let common = min(x.count, y.count)
    let equalPrefix = x.withUnsafeBytes { a in
        y.withUnsafeBytes { b in common == 0 || memcmp(a.baseAddress!, b.baseAddress!, common) == 0 }
    }
    if equalPrefix { return x.count == y.count ? nil : common }
    var low = 0
    var high = common
    // Binary search for the first differing byte (memcmp over halves).
    while high - low > 1 {
        let middle = (low + high) / 2
        let same = x.withUnsafeBytes { a in
            y.withUnsafeBytes { b in memcmp(a.baseAddress! + low, b.baseAddress! + low, middle - low) == 0 }
        }
        if same { low = middle } else { high = middle }
    }
    return low
}

/// `count` random bytes from /dev/urandom.
func randomBytes(_ count: Int) throws -> [UInt8] {
    try withFile("/dev/urandom", O_RDONLY) { fd in
        var result = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = try result.withUnsafeMutableBytes { buffer in
                try posix("read(/dev/urandom)") { read(fd, buffer.baseAddress! + filled, count - filled) }
            }
            filled += got
        }
        return result
    }
}
