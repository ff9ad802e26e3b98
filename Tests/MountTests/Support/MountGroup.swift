import Foundation
import Glibc
import TestSupport
import Testing

/// Several SyncFS mounts of one container directory (like `SyncedMounts`, for any number): each a
/// daemon of the built binary with its own state directory and mount point, like machines
/// sharing a container. Each mount `i` also gets an outage switch, `outageFile(i)`: while that
/// file exists its container calls fail as unreachable (`OutageSwitch`).
///
/// `tearDown` (always run by `with`) removes every outage switch and unmounts every daemon,
/// whatever the test did, then removes the temporary directories.
final class MountGroup: @unchecked Sendable {
    /// The directory holding the shared container and the outage switches.
    let baseDir: String
    let containerPath: String
    let mounts: [TestFolder]

    private init(baseDir: String, containerPath: String, mounts: [TestFolder]) {
        self.baseDir = baseDir
        self.containerPath = containerPath
        self.mounts = mounts
    }

    /// The label of mount `index` in messages: A, B, C, …
    static func label(_ index: Int) -> String { String(UnicodeScalar(UInt8(65 + index))) }

    /// Mount `index`'s outage switch (absent: reachable).
    func outageFile(_ index: Int) -> String { baseDir + "/outage-" + Self.label(index) }

    /// Mounts `count` daemons, one after the other, on a fresh container. `arguments` are
    /// appended to every `mount`.
    static func make(count: Int, uploadDelay: Int = 20, arguments: [String] = []) throws -> MountGroup {
        umask(0o022)
        let base = try makeTemporaryDirectory("syncfs-tests")
        let container = base + "/container"
        var mounts: [TestFolder] = []
        do {
            try makeDirectory(container)
            for index in 0..<count {
                let outage = base + "/outage-" + label(index)
                mounts.append(
                    try TestFolder.make(
                        .mount, sharedContainer: container,
                        mountArguments: ["--upload-delay", String(uploadDelay)] + arguments,
                        mountEnvironment: OutageSwitch.environment(outage)))
            }
            return MountGroup(baseDir: base, containerPath: container, mounts: mounts)
        } catch {
            for mount in mounts { mount.tearDown() }
            try? FileManager.default.removeItem(atPath: base)
            throw error
        }
    }

    /// Runs `body` on fresh mounts and always tears them down.
    static func with<R>(
        count: Int, uploadDelay: Int = 20, arguments: [String] = [], _ body: (MountGroup) throws -> R
    ) throws -> R {
        let group = try make(count: count, uploadDelay: uploadDelay, arguments: arguments)
        defer { group.tearDown() }
        return try body(group)
    }

    /// Starts (true) or ends (false) an outage of mount `index`'s container.
    func setOutage(_ index: Int, _ on: Bool) {
        let path = outageFile(index)
        if on {
            let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
            if fd >= 0 { close(fd) }
        } else {
            unlink(path)
        }
    }

    /// Unmounts every daemon (never leaves a mount behind) and removes the temporary directories.
    func tearDown() {
        for index in mounts.indices { setOutage(index, false) }
        for mount in mounts { mount.tearDown() }
        if mounts.contains(where: { TestFolder.isMounted($0.root) }) {
            Issue.record("tearDown: a mount is left; keeping the container at \(containerPath)")
            return
        }
        try? FileManager.default.removeItem(atPath: baseDir)
    }

    /// The last `limit` bytes of every daemon's log, for failure messages.
    func logs(limit: Int = 3000) -> String {
        mounts.indices.map { index in
            "---- daemon \(Self.label(index)) log (\(mounts[index].logPath)):\n\(mounts[index].daemonLog(limit: limit))"
        }.joined(separator: "\n")
    }

    /// The differences between every mount's tree and the first one's (empty: all identical),
    /// and that tree. Shapes (names, kinds, sizes, times) are compared first, contents only once
    /// they agree.
    func differences() -> (lines: [String], tree: SyncedTree?) {
        let shapes = mounts.map { SyncedTree.snapshot($0.root, contents: false) }
        var lines: [String] = []
        for index in mounts.indices.dropFirst() {
            lines += shapes[0].differences(from: shapes[index], labels: (Self.label(0), Self.label(index)))
        }
        guard lines.isEmpty else { return (lines, nil) }
        let trees = mounts.map { SyncedTree.snapshot($0.root) }
        for index in mounts.indices.dropFirst() {
            lines += trees[0].differences(from: trees[index], labels: (Self.label(0), Self.label(index)))
        }
        return (lines, lines.isEmpty ? trees[0] : nil)
    }
}
