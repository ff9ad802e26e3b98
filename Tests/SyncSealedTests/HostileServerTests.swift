import SyncBackend
import SyncBackendTesting
import Synchronization
import Testing

@testable import SyncSealed

/// A server that lies: it forwards to an honest container and changes what it answers (the feed,
/// entry reads, chunks) as the test says.
final class LyingServer: ForwardingTestContainer, Sendable {
    let base: InMemoryContainer
    private let lies: Mutex<Lies>

    struct Lies {
        /// Applied to every page of the feed, and to entry reads (as a page of one).
        var feed: @Sendable ([RemoteEntry]) -> [RemoteEntry] = { $0 }
        var chunk: @Sendable (EncodedChunk) -> EncodedChunk = { $0 }
        /// Answer every all-or-nothing commit as stored, and store nothing.
        var dropCommits = false
    }

    init(_ base: InMemoryContainer) {
        self.base = base
        self.lies = Mutex(Lies())
    }

    func lie(feed: @escaping @Sendable ([RemoteEntry]) -> [RemoteEntry]) { lies.withLock { $0.feed = feed } }
    func lie(chunk: @escaping @Sendable (EncodedChunk) -> EncodedChunk) { lies.withLock { $0.chunk = chunk } }

    func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        var page = try await base.changes(after: cursor, limit: limit)
        page.entries = lies.withLock { $0.feed }(page.entries)
        return page
    }

    func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        guard let entry = try await base.entry(id) else { return nil }
        return lies.withLock { $0.feed }([entry]).first
    }

    func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        lies.withLock { $0.chunk }(try await base.chunk(hash))
    }

    func dropCommits() { lies.withLock { $0.dropCommits = true } }

    func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError) -> AllOrNothingOutcome {
        guard lies.withLock({ $0.dropCommits }) else { return try await base.commit(allOrNothing: requests) }
        return .committed(
            requests.enumerated().map { index, request in
                guard case .put(let state) = request.change else {
                    return RemoteEntry(
                        id: request.id, version: 1_000 + UInt64(index), isDeleted: true, device: request.device,
                        state: EntryState(parent: .root, name: [0x78], kind: .file, mode: 0, mtime: 0, size: 0))
                }
                return RemoteEntry(
                    id: request.id, version: 1_000 + UInt64(index), isDeleted: false, device: request.device,
                    state: state)
            })
    }
}

/// The hostile-server suite at the container's level (doc/CRYPTO.md): a device writes through an
/// honest server, another reads the same container through a lying one; every lie is caught,
/// nothing it changed reaches the engine, and the reader then neither reads nor writes anything.
@Suite("A hostile server meets a sealed container")
struct HostileServerTests {
    /// A container with a folder and a file in it, written by `device` through the honest server.
    struct Scene {
        let honest = InMemoryContainer()
        let device = DeviceKeys.generate()
        let writer: SealedContainer
        let folder = FileID.random()
        let file = FileID.random()
        let chunk = Array("the content the server would like to read".utf8).withUnsafeBytes { ChunkCodec.encode($0) }

        init() async throws {
            writer = try await SealedContainer.create(
                in: honest, as: device, recovery: .generate(), deviceName: "writer")
            try await writer.putChunk(chunk)
            let outcomes = try await writer.commit(batch: [
                CommitRequest(
                    id: folder, baseVersion: 0,
                    change: .put(
                        EntryState(
                            parent: .root, name: Array("Taxes".utf8), kind: .directory, mode: 0o755, mtime: 1, size: 0)),
                    device: "writer"),
                CommitRequest(
                    id: file, baseVersion: 0,
                    change: .put(
                        EntryState(
                            parent: folder, name: Array("2026.pdf".utf8), kind: .file, mode: 0o644, mtime: 1,
                            size: Int64(chunk.plainLength),
                            manifest: [ChunkRef(hash: chunk.hash, length: Int64(chunk.plainLength))])),
                    device: "writer"),
            ])
            #expect(outcomes.allSatisfy { if case .committed = $0 { true } else { false } })
        }

        /// A reader of the same container through `server`, as the same member device.
        func reader(through server: LyingServer, knownHead: LedgerHead? = nil) -> SealedContainer {
            SealedContainer(wrapping: server, as: device, knownHead: knownHead)
        }
    }

    /// Reads through `reader` and expects an alarm (and nothing applied, nothing written after).
    static func expectAlarm(_ reader: SealedContainer, _ what: String) async {
        var failure: ContainerProtocolError?
        do {
            _ = try await reader.changes(after: .beginning, limit: 100)
        } catch {
            failure = error
        }
        #expect(failure?.isRetryable == true, "\(what): a lie must fail retryably, never look like data")
        #expect(reader.alarm != nil, "\(what): no alarm")
        // Nothing more is read or written once the alarm is up.
        var wrote = false
        do {
            _ = try await reader.commit(
                CommitRequest(
                    id: .random(), baseVersion: 0,
                    change: .put(
                        EntryState(parent: .root, name: [0x78], kind: .directory, mode: 0o755, mtime: 0, size: 0)),
                    device: "reader"))
            wrote = true
        } catch {}
        #expect(!wrote, "\(what): a commit went through after the alarm")
    }

    @Test func anHonestServerRaisesNoAlarm() async throws {
        let scene = try await Scene()
        let server = LyingServer(scene.honest)
        let reader = scene.reader(through: server)
        let page = try await reader.changes(after: .beginning, limit: 100)
        #expect(Set(page.entries.map(\.id)) == [scene.folder, scene.file])
        #expect(try await reader.chunk(scene.chunk.hash) == scene.chunk)
        #expect(reader.alarm == nil)
    }

    @Test func swappedRecordsAreCaught() async throws {
        let scene = try await Scene()
        let server = LyingServer(scene.honest)
        let (folder, file) = (scene.folder, scene.file)
        server.lie { entries in
            guard let a = entries.firstIndex(where: { $0.id == folder }),
                let b = entries.firstIndex(where: { $0.id == file })
            else { return entries }
            var swapped = entries
            (swapped[a].state.xattrs, swapped[b].state.xattrs) = (entries[b].state.xattrs, entries[a].state.xattrs)
            return swapped
        }
        await Self.expectAlarm(scene.reader(through: server), "swap")
    }

    @Test func anInjectedEntryIsCaught() async throws {
        let scene = try await Scene()
        let server = LyingServer(scene.honest)
        let copied = try #require(try await scene.honest.entry(scene.file))
        server.lie { entries in
            var injected = copied
            injected.id = .random()
            injected.version = (entries.map(\.version).max() ?? 0) + 1
            return entries + [injected]
        }
        await Self.expectAlarm(scene.reader(through: server), "injection")
    }

    @Test func aDroppedChangeIsCaught() async throws {
        let scene = try await Scene()
        let server = LyingServer(scene.honest)
        let file = scene.file
        server.lie { $0.filter { $0.id != file } }
        await Self.expectAlarm(scene.reader(through: server), "drop")
    }

    @Test func anOldVersionReplayedIsCaught() async throws {
        let scene = try await Scene()
        let old = try #require(try await scene.honest.entry(scene.file))
        var renamed = try #require(try await scene.writer.entry(scene.file))
        renamed.state.name = Array("2026-final.pdf".utf8)
        _ = try await scene.writer.commit(
            CommitRequest(id: scene.file, baseVersion: renamed.version, change: .put(renamed.state), device: "writer"))
        let server = LyingServer(scene.honest)
        server.lie { entries in
            entries.map {
                $0.id == old.id
                    ? RemoteEntry(
                        id: old.id, version: $0.version, isDeleted: false, device: $0.device, state: old.state) : $0
            }
        }
        await Self.expectAlarm(scene.reader(through: server), "replay")
    }

    @Test func aRollbackBelowWhatTheDeviceSawIsCaught() async throws {
        let scene = try await Scene()
        try await scene.writer.catchUp()  // the writer has read its own last commit
        let head = try #require(scene.writer.head)
        let server = LyingServer(scene.honest)
        // The server shows the container as it was before the last commit.
        let cutoff = try #require(try await scene.honest.entry(scene.folder)).version
        server.lie { $0.filter { $0.version < cutoff } }
        await Self.expectAlarm(scene.reader(through: server, knownHead: head), "rollback")
    }

    @Test func aSubstitutedKeyInTheKeyringIsCaught() async throws {
        let scene = try await Scene()
        let server = LyingServer(scene.honest)
        let keyringID = Keyring.fileID(publishedIn: 1)
        let intruder = DeviceKeys.generate().identity
        server.lie { entries in
            entries.map { entry in
                guard entry.id == keyringID, let bytes = OpaqueEntry.sealed(from: entry.state, of: entry.id),
                    let keyring = try? Keyring(encoded: bytes)
                else { return entry }
                let swapped = Keyring(
                    container: keyring.container, recovery: keyring.recovery,
                    members: keyring.members.map { Keyring.Member(identity: intruder, addedIn: $0.addedIn) },
                    epochs: keyring.epochs)
                var changed = entry
                changed.state = OpaqueEntry.state(of: entry.id, sealed: swapped.encoded, chunks: [])
                return changed
            }
        }
        await Self.expectAlarm(scene.reader(through: server), "substituted key")
    }

    /// After a removal (a new epoch), the server serves the keyring from before it in the place of
    /// the new one: the removed device would be a member again, with the old epoch the newest.
    @Test func aStaleKeySetIsCaught() async throws {
        let scene = try await Scene()
        let removed = DeviceKeys.generate()
        try await scene.writer.admit(removed.identity)
        try await scene.writer.remove(removed.identity.signing)
        try await scene.writer.catchUp()
        let removal = try #require(scene.writer.head).sequence
        let before = try #require(
            try await scene.honest.entry(Keyring.fileID(publishedIn: removal - 1)).flatMap {
                OpaqueEntry.sealed(from: $0.state, of: $0.id)
            })
        let server = LyingServer(scene.honest)
        let newest = Keyring.fileID(publishedIn: removal)
        server.lie { entries in
            entries.map { entry in
                guard entry.id == newest else { return entry }
                var stale = entry
                stale.state = OpaqueEntry.state(of: entry.id, sealed: before, chunks: [])
                return stale
            }
        }
        await Self.expectAlarm(scene.reader(through: server), "stale key set")
    }

    @Test func aDowngradedRecordIsCaught() async throws {
        let scene = try await Scene()
        let server = LyingServer(scene.honest)
        let file = scene.file
        server.lie { entries in
            entries.map { entry in
                guard entry.id == file, var bytes = OpaqueEntry.sealed(from: entry.state, of: entry.id) else {
                    return entry
                }
                bytes[0] = 0
                var changed = entry
                changed.state = OpaqueEntry.state(of: entry.id, sealed: bytes, chunks: entry.state.manifest)
                return changed
            }
        }
        await Self.expectAlarm(scene.reader(through: server), "downgrade")
    }

    @Test func lyingSizesAreCaught() async throws {
        let scene = try await Scene()
        let server = LyingServer(scene.honest)
        let file = scene.file
        server.lie { entries in
            entries.map { entry in
                guard entry.id == file else { return entry }
                var changed = entry
                changed.state.manifest = entry.state.manifest.map { ChunkRef(hash: $0.hash, length: $0.length * 2) }
                changed.state.size *= 2
                return changed
            }
        }
        await Self.expectAlarm(scene.reader(through: server), "lying sizes")
    }

    @Test func aForkBetweenTwoDevicesIsCaughtWhenTheyMeet() async throws {
        let scene = try await Scene()
        // The server keeps a second copy of the container and lets another device commit there.
        let fork = InMemoryContainer()
        let all = try await scene.honest.changes(after: .beginning, limit: 1_000)
        var requests: [CommitRequest] = []
        for entry in all.entries.sorted(by: { $0.version < $1.version }) {
            requests.append(
                CommitRequest(id: entry.id, baseVersion: 0, change: .put(entry.state), device: entry.device))
        }
        try await fork.putChunks([try await scene.honest.chunk(scene.keysChunkID())])
        for request in requests { #expect(try await fork.commit(request).isCommitted) }
        let other = try await SealedContainer.open(fork, as: scene.device, knownHead: nil)
        _ = try await other.commit(
            CommitRequest(
                id: .random(), baseVersion: 0,
                change: .put(
                    EntryState(
                        parent: .root, name: Array("on the fork".utf8), kind: .directory, mode: 0o755, mtime: 0, size: 0
                    )),
                device: "other"))
        _ = try await scene.writer.commit(
            CommitRequest(
                id: .random(), baseVersion: 0,
                change: .put(
                    EntryState(
                        parent: .root, name: Array("on the main line".utf8), kind: .directory, mode: 0o755, mtime: 0,
                        size: 0)),
                device: "writer"))
        // The device that saw the main line is now shown the fork.
        try await scene.writer.catchUp()
        let head = try #require(scene.writer.head)
        let forked = LyingServer(fork)
        await Self.expectAlarm(scene.reader(through: forked, knownHead: head), "fork")
    }

    @Test func aCommitAnsweredAsStoredButNotStoredIsCaught() async throws {
        let scene = try await Scene()
        let server = LyingServer(scene.honest)
        let writer = try await SealedContainer.open(server, as: scene.device, knownHead: nil)
        server.dropCommits()
        let outcome = try await writer.commit(
            CommitRequest(
                id: .random(), baseVersion: 0,
                change: .put(
                    EntryState(
                        parent: .root, name: Array("lost".utf8), kind: .directory, mode: 0o755, mtime: 0, size: 0)),
                device: "writer"))
        // Answered with the ledger's version, not the one the server made up (1,000 and up).
        guard case .committed(let entry) = outcome else {
            Issue.record("not committed: \(outcome)")
            return
        }
        #expect(entry.version == FeedSpot(sequence: 3, index: 0).version)
        // The next read finds the commit missing: an alarm, not a silent loss.
        await #expect(throws: ContainerProtocolError.self) {
            _ = try await writer.changes(after: .beginning, limit: 100)
        }
        #expect(writer.alarm == .commitNotStored(sequence: 3))
    }

    @Test func anotherContainerShownInPlaceOfTheOneThisDeviceMadeIsCaught() async throws {
        let scene = try await Scene()
        try await scene.writer.catchUp()
        let genesis = try #require(try await SealedContainer.open(scene.honest, as: scene.device, knownHead: nil).head)
        // The server makes a container of its own in which this device is a member (its public keys
        // are public), and shows it to a device that expects its own container.
        let fake = InMemoryContainer()
        let serverKeys = DeviceKeys.generate()
        let id = SealedContainerID.random()
        let secret = EpochSecret.random()
        let keyring = Keyring.genesis(
            container: id, creator: scene.device.identity, recovery: serverKeys.identity, secret: secret)
        let made = SealedCommit(
            sequence: 1, previous: LedgerEntry.genesisPrevious,
            keys: EpochKeys(secret: secret, container: id, epoch: 0),
            device: "server", signer: serverKeys, time: 0)
        #expect(try await fake.commit(allOrNothing: made.requests(for: [], publishing: keyring).0).isCommitted)
        await #expect(throws: ContainerProtocolError.self) {
            _ = try await SealedContainer.open(fake, as: scene.device, knownHead: genesis)
        }
        // Without what the device kept, it would have been taken for a member's container.
        #expect(try await SealedContainer.open(fake, as: scene.device, knownHead: nil).head?.sequence == 1)
    }

    @Test func aCorruptedChunkIsRefusedNotServed() async throws {
        let scene = try await Scene()
        let server = LyingServer(scene.honest)
        server.lie { chunk in
            var changed = chunk
            changed.payload[changed.payload.count / 2] ^= 1
            return changed
        }
        let reader = scene.reader(through: server)
        var failure: ContainerProtocolError?
        do {
            _ = try await reader.chunk(scene.chunk.hash)
        } catch {
            failure = error
        }
        #expect(failure == .corruptChunk(scene.chunk.hash))
    }
}

extension HostileServerTests.Scene {
    /// The ID the chunk is stored under.
    func keysChunkID() async throws -> ChunkHash {
        let ids = try await honest.changes(after: .beginning, limit: 1_000).entries.flatMap(\.state.manifest).map(
            \.hash)
        return try #require(ids.first)
    }
}

extension CommitOutcome {
    var isCommitted: Bool {
        if case .committed = self { return true }
        return false
    }
}
