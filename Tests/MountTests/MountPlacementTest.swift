import Foundation
import Glibc
import Testing

/// Where containers and mounts may go (doc/CLI.md): `init` of a path inside a SyncFS folder is
/// refused up front with the reason, leaving nothing behind; a container is not mounted at a
/// folder inside one of its own mounts; and a state directory in use names the mount and the
/// PID of the daemon using it.
@Suite(.serialized)
struct MountPlacementTest {
    private func run(_ arguments: [String]) throws -> ModelProcessResult {
        ModelProcess.run([try TestFolder.binaryPath()] + arguments, timeout: 60)
    }

    @Test func initInsideAMountIsRefusedLeavingNothing() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        let result = try run(["init", folder.path("box")])
        #expect(result.status == 65, "\(result)")
        #expect(result.stderr.contains("inside the SyncFS folder \(folder.root)"), "\(result.stderr)")
        #expect(try listDirectory(folder.root).isEmpty, "nothing was left in the folder")
    }

    @Test func aContainerIsNotMountedInsideItsOwnMount() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        let inner = folder.path("inner")
        try makeDirectory(inner)
        let state = folder.baseDir + "/inner-state"
        let result = try run(["mount", folder.containerPath, inner, "--state-dir", state])
        if TestFolder.isMounted(inner) { TestFolder.lazyUnmount(inner) }
        #expect(result.status == 65, "\(result)")
        #expect(result.stderr.contains("inside \(folder.root)"), "\(result.stderr)")
        #expect(!pathExists(state), "no state directory was made")
    }

    @Test func aStateDirectoryInUseNamesTheMountAndPID() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        let other = folder.baseDir + "/other"
        try makeDirectory(other)
        let result = try run(["mount", folder.containerPath, other, "--state-dir", folder.stateDir])
        if TestFolder.isMounted(other) { TestFolder.lazyUnmount(other) }
        let pid = try #require(folder.daemonPID)
        #expect(result.status == 75, "\(result)")
        #expect(result.stderr.contains("PID \(pid)"), "\(result.stderr)")
        #expect(result.stderr.contains("at \(folder.root)"), "\(result.stderr)")
    }
}
