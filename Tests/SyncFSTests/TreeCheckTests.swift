import SyncBackend
import SyncBackendTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// The tree check (`TreeChecker`): the tree a mount applied against its container's
/// digest, after a switch of server and on `verify`.
@Suite("Tree check: the applied tree against the container", .serialized)
struct TreeCheckTests {
    @Test func aTreeAppliedFromAnHonestFeedMatchesTheContainer() async throws {
        let pair = try SyncedPair()
        _ = try pair.a.makeFile("a.txt", contents: Array("a".utf8))
        _ = try pair.a.mkdir("d")
        try await eventually("both on B") { try Set(pair.b.childNames()) == ["a.txt", "d"] }
        try await pair.settle()
        let report = try #require(pair.engineB.verifyTree(timeout: .seconds(20)))
        #expect(report.matched && report.isConsistent && report.entries == 2, "\(report)")
    }

    /// The liar's view adds a file to every page; after the switch to the honest view the file
    /// goes (and never reaches the container), the real one stays.
    @Test func aSwitchOfServerRemovesWhatTheServerLeftMadeUp() async throws {
        let container = InMemoryContainer()
        let view = SwitchingView(base: container)
        let pair = try SyncedPair(container: container, viewOfB: view)
        _ = try pair.a.makeFile("real.txt", contents: Array("real".utf8))
        try await eventually("both on B") { try Set(pair.b.childNames()) == ["real.txt", "made-up.txt"] }
        view.switchToHonest()
        try await eventually("made-up.txt gone from B") { try pair.b.childNames() == ["real.txt"] }
        try await pair.settle()
        #expect(try await container.entry(SwitchingView.madeUpID) == nil)
        let report = try #require(pair.engineB.verifyTree(timeout: .seconds(20)))
        #expect(report.matched, "\(report)")
    }

    /// A check that cannot be made (a server older than the digest) is retried at each look at
    /// the feed; it never stops the following nor shows as the mount's failure.
    @Test func aContainerWithoutADigestNeverStopsTheFollowing() async throws {
        let container = InMemoryContainer()
        let pair = try SyncedPair(container: container, viewOfB: DigestlessView(base: container))
        let report = try #require(pair.engineB.verifyTree(timeout: .seconds(20)))
        #expect(report.error != nil && !report.isConsistent, "\(report)")
        _ = try pair.a.makeFile("later.txt", contents: Array("x".utf8))
        try await eventually("later.txt on B") { try contents(pair.b, "later.txt") == Array("x".utf8) }
        // Nor is the mount shown as failing: the follower is caught up, without an error.
        try await eventually("B caught up without a failure") {
            let progress = pair.engineB.progress
            return progress.feedCaughtUp && progress.lastFailure == nil
        }
        let progress = pair.engineB.progress
        #expect(progress.feedCaughtUp && progress.lastFailure == nil, "\(progress)")
    }
}

/// Forwards every call to `base`; while lying, every page of the feed with entries gets an
/// empty file `made-up.txt` in the root. `switchToHonest` stops lying and tells the observers
/// of switches, as `FailoverContainer` does when it moves to another server.
private final class SwitchingView: ForwardingTestContainer, ServerSwitching {
    static let madeUpID = FileID(high: 0x11ed, low: 1)
    let base: InMemoryContainer
    private let lying = Atomic(true)
    private let observers = Mutex<[@Sendable () -> Void]>([])

    init(base: InMemoryContainer) { self.base = base }

    func switchToHonest() {
        lying.store(false, ordering: .relaxed)
        for observer in observers.withLock({ $0 }) { observer() }
    }

    func observeSwitches(_ observer: @escaping @Sendable () -> Void) { observers.withLock { $0.append(observer) } }

    func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        var batch = try await base.changes(after: cursor, limit: limit)
        if lying.load(ordering: .relaxed), let last = batch.entries.last {
            let state = EntryState(
                parent: .root, name: Array("made-up.txt".utf8), kind: .file, mode: 0o644, mtime: 1, size: 0)
            batch.entries.append(
                RemoteEntry(id: Self.madeUpID, version: last.version, isDeleted: false, device: "liar", state: state))
        }
        return batch
    }

    func treeDigest() async throws(ContainerProtocolError) -> TreeDigest { try await base.treeDigest() }
}

/// Forwards every call to `base` but the tree digest, which fails as a server older than it answers.
private struct DigestlessView: ForwardingTestContainer {
    let base: InMemoryContainer

    func treeDigest() async throws(ContainerProtocolError) -> TreeDigest {
        throw .unavailable("404 notFound (a server older than the tree digest answers so as well)")
    }
}
