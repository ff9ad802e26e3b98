import Foundation
import Glibc
import TestSupport
import Testing

@testable import SyncBackend
@testable import syncfs_mount

/// `OutageFileContainer`: the test switch the daemon of `syncfs-mount` takes from
/// `SYNCFS_TEST_OUTAGE_FILE` (doc/CLI.md, "Test hooks").
@Suite("OutageFileContainer")
struct OutageFileContainerTests {
    /// A switch file in a fresh temporary directory (not created).
    private func switchPath() throws -> (directory: String, file: String) {
        let directory = try makeTemporaryDirectory()
        return (directory, directory + "/outage")
    }

    private func touch(_ path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        #expect(fd >= 0)
        close(fd)
    }

    @Test func everyCallFailsWhileTheFileExistsAndGoesThroughOnceItIsRemoved() async throws {
        let (directory, file) = try switchPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let memory = InMemoryContainer()
        let switched = OutageFileContainer(memory, path: file, checkInterval: .milliseconds(1))
        let chunk = rawChunk("c")
        _ = try await switched.entry(.root)

        touch(file)
        try await Task.sleep(for: .milliseconds(5))  // scenario: past the 1 ms check interval
        let calls: [() async throws -> Void] = [
            { _ = try await switched.missingChunks([chunk.hash]) },
            { try await switched.putChunk(chunk) },
            { _ = try await switched.chunk(chunk.hash) },
            { _ = try await switched.entry(.root) },
            { _ = try await switched.put(.random(), base: 0, directoryState("d")) },
            { _ = try await switched.changes(after: .beginning, limit: 1) },
            { _ = try await switched.waitForChanges(after: .beginning, timeout: .seconds(1)) },
        ]
        for call in calls {
            let error = await protocolError(call)
            #expect(error?.isUnavailable == true && error?.isRetryable == true, "\(String(describing: error))")
        }
        #expect(try await memory.changes(after: .beginning, limit: 1).entries.isEmpty)  // nothing forwarded
        #expect(try await memory.missingChunks([chunk.hash]) == [chunk.hash])

        unlink(file)
        try await Task.sleep(for: .milliseconds(5))  // scenario: past the 1 ms check interval
        try await switched.putChunk(chunk)
        try await switched.mustPut(.random(), base: 0, fileState("f", chunks: [chunk]))
        #expect(try await switched.changes(after: .beginning, limit: 10).entries.count == 1)
    }

    /// An outage that begins while the follower waits on the feed ends the wait promptly.
    @Test func anOutageEndsAWaitForChanges() async throws {
        let (directory, file) = try switchPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let memory = InMemoryContainer()
        let switched = OutageFileContainer(memory, path: file, checkInterval: .milliseconds(5))
        let cursor = try await memory.currentCursor()
        let start = ContinuousClock.now
        async let error = protocolError { _ = try await switched.waitForChanges(after: cursor, timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(100))  // scenario: the outage starts during the wait
        touch(file)
        let failure = await error
        #expect(failure?.isUnavailable == true, "\(String(describing: failure))")
        // Well below the 30 s timeout (generous for a loaded machine).
        #expect(ContinuousClock.now - start < .seconds(15))
    }

    /// Without an outage a wait still returns as soon as something is committed, and a wait
    /// that times out returns false.
    @Test func aWaitWithoutAnOutageBehavesAsTheBase() async throws {
        let (directory, file) = try switchPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let memory = InMemoryContainer()
        let switched = OutageFileContainer(memory, path: file)
        let cursor = try await memory.currentCursor()
        #expect(try await switched.waitForChanges(after: cursor, timeout: .milliseconds(50)) == false)
        async let changed = switched.waitForChanges(after: cursor, timeout: .seconds(30))
        try await Task.sleep(for: .milliseconds(50))  // scenario: the change lands during the wait
        try await memory.mustPut(.random(), base: 0, directoryState("d"))
        #expect(try await changed)
    }
}
