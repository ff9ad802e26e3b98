import SyncBackend
import SyncBackendTesting
import Synchronization
import Testing

@testable import SyncSealed

/// A server whose history lies: it forwards to an honest container (its feed stays honest) and
/// changes what both history calls answer as the test says.
final class LyingHistoryServer: ForwardingTestContainer, ContainerHistory, Sendable {
    let base: InMemoryContainer
    private let lies: Mutex<@Sendable ([HistoricVersion]) -> [HistoricVersion]>

    init(_ base: InMemoryContainer) {
        self.base = base
        self.lies = Mutex({ $0 })
    }

    func lie(_ change: @escaping @Sendable ([HistoricVersion]) -> [HistoricVersion]) {
        lies.withLock { $0 = change }
    }

    func history(of id: FileID, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion] {
        let listed = try await base.history(of: id, limit: limit)
        return lies.withLock { $0 }(listed)
    }

    func deletedEntries(before: EntryVersion?, limit: Int) async throws(ContainerProtocolError)
        -> [HistoricVersion]
    {
        let listed = try await base.deletedEntries(before: before, limit: limit)
        return lies.withLock { $0 }(listed)
    }
}

/// History, the trash and restore through the sealed wrapper (doc/CRYPTO.md "History"): an honest
/// server's history is decrypted, and a version the ledger never vouched for, a swapped record or
/// another manifest raises an alarm and shows nothing.
@Suite("The history of a sealed container")
struct SealedHistoryTests {
    /// A sealed container where `file` was written twice (`first`, then `second` content) and
    /// `gone` was written and deleted, all by `device` through the honest container.
    struct Scene {
        let honest = InMemoryContainer()
        let device = DeviceKeys.generate()
        let writer: SealedContainer
        let file = FileID.random()
        let gone = FileID.random()
        let first = Self.chunk("the first content")
        let second = Self.chunk("the second content, longer than the first")
        /// `file`'s versions as committed, oldest first.
        let written: [RemoteEntry]
        let tombstone: RemoteEntry

        init() async throws {
            writer = try await SealedContainer.create(in: honest, as: device, recovery: .generate(), deviceName: "w")
            try await writer.putChunks([first, second])
            let one = try await Self.commit(writer, file, base: 0, Self.state("notes.txt", first))
            let two = try await Self.commit(writer, file, base: one.version, Self.state("notes.txt", second))
            written = [one, two]
            let doomed = try await Self.commit(writer, gone, base: 0, Self.state("old.txt", first))
            guard
                case .committed(let deleted) = try await writer.commit(
                    CommitRequest(id: gone, baseVersion: doomed.version, change: .delete, device: "w"))
            else { throw ContainerProtocolError.invalidRequest("the delete was refused") }
            tombstone = deleted
        }

        /// The same member device reading through `server`.
        func reader(through server: LyingHistoryServer) -> SealedContainer {
            SealedContainer(wrapping: server, as: device, knownHead: nil)
        }

        /// The keys of the container's only epoch.
        var keys: EpochKeys { writer.state.withLock { $0.keys[0]! } }

        static func chunk(_ text: String) -> EncodedChunk {
            Array(text.utf8).withUnsafeBytes { ChunkCodec.encode($0) }
        }

        static func state(_ name: String, _ chunk: EncodedChunk) -> EntryState {
            EntryState(
                parent: .root, name: Array(name.utf8), kind: .file, mode: 0o644, mtime: 1,
                size: Int64(chunk.plainLength), manifest: [ChunkRef(hash: chunk.hash, length: Int64(chunk.plainLength))]
            )
        }

        static func commit(_ container: SealedContainer, _ id: FileID, base: EntryVersion, _ state: EntryState)
            async throws -> RemoteEntry
        {
            let outcome = try await container.commit(
                CommitRequest(id: id, baseVersion: base, change: .put(state), device: "w"))
            guard case .committed(let entry) = outcome else {
                throw ContainerProtocolError.invalidRequest("refused: \(outcome)")
            }
            return entry
        }
    }

    /// `call` fails retryably, the reader's alarm is up, and history shows nothing after it.
    static func expectAlarm(
        _ reader: SealedContainer, _ what: String, _ call: (SealedContainer) async throws -> [HistoricVersion]
    ) async {
        var shown: [HistoricVersion]?
        var failure: ContainerProtocolError?
        do {
            shown = try await call(reader)
        } catch let error as ContainerProtocolError {
            failure = error
        } catch {
            Issue.record("\(what): \(error)")
        }
        #expect(shown == nil, "\(what): a lie was shown")
        #expect(failure?.isRetryable == true, "\(what): a lie must fail retryably, never look like history")
        #expect(reader.alarm != nil, "\(what): no alarm")
        var shownAfter = false
        do {
            _ = try await call(reader)
            shownAfter = true
        } catch {}
        #expect(!shownAfter, "\(what): history was shown after the alarm")
    }

    @Test func anHonestServersHistoryAndTrashAreDecrypted() async throws {
        let scene = try await Scene()
        let reader = scene.reader(through: LyingHistoryServer(scene.honest))
        let versions = try await reader.history(of: scene.file, limit: 10)
        #expect(versions.map(\.entry) == scene.written.reversed())
        #expect(versions[0].replacedAt == nil && versions[1].replacedAt == versions[0].committedAt)
        // What the server keeps is opaque: its history of the entry names no file.
        let stored = try await scene.honest.history(of: scene.file, limit: 10)
        #expect(stored.count == 2 && stored.allSatisfy { $0.entry.state.name == Array(scene.file.hex.utf8) })

        let trash = try await reader.deletedEntries(before: nil, limit: 10)
        #expect(trash.map(\.entry) == [scene.tombstone])
        #expect(trash[0].entry.state.name == Array("old.txt".utf8) && trash[0].replacedAt == nil)
        #expect(try await reader.deletedEntries(before: scene.tombstone.version, limit: 10).isEmpty)
        #expect(try await reader.history(of: .random(), limit: 10).isEmpty)
        #expect(reader.alarm == nil)
    }

    @Test func restoringIsACommitOfAnOldStateThroughTheWrapper() async throws {
        let scene = try await Scene()
        let reader = scene.reader(through: LyingHistoryServer(scene.honest))
        let old = try #require(try await reader.history(of: scene.file, limit: 10).last)
        let restored = try await Scene.commit(
            reader, scene.file, base: scene.written[1].version, old.entry.state)
        #expect(try await reader.entry(scene.file) == restored)
        #expect(try await reader.chunk(scene.first.hash) == scene.first)
        #expect(
            try await reader.history(of: scene.file, limit: 10).map(\.entry.state.manifest)
                == [scene.first, scene.second, scene.first].map {
                    [ChunkRef(hash: $0.hash, length: Int64($0.plainLength))]
                })

        // From the trash: the deleted entry's last state, committed over its tombstone.
        let deleted = try #require(try await reader.deletedEntries(before: nil, limit: 10).first)
        let back = try await Scene.commit(reader, scene.gone, base: deleted.entry.version, deleted.entry.state)
        #expect(back.state.name == Array("old.txt".utf8) && !back.isDeleted)
        #expect(try await reader.deletedEntries(before: nil, limit: 10).isEmpty)
        // The writer, reading the honest container, sees both restores as the ledger vouches them.
        #expect(try await scene.writer.entry(scene.gone)?.isDeleted == false)
        #expect(try await scene.writer.entry(scene.file)?.state.manifest == old.entry.state.manifest)
        #expect(reader.alarm == nil && scene.writer.alarm == nil)
    }

    @Test func aVersionFromBeforeANewEpochIsRestoredWithItsChunksSealedAgain() async throws {
        let server = InMemoryContainer()
        let laptop = DeviceKeys.generate()
        let phone = DeviceKeys.generate()
        let container = try await SealedContainer.create(
            in: server, as: laptop, recovery: .generate(), deviceName: "laptop")
        let (first, second) = (Scene.chunk("written in epoch 0"), Scene.chunk("written in epoch 1"))
        try await container.putChunk(first)
        let file = FileID.random()
        let old = try await Scene.commit(container, file, base: 0, Scene.state("a.txt", first))
        // A member removed: a new epoch, whose chunk IDs differ.
        try await container.admit(phone.identity)
        try await container.remove(phone.identity.signing)
        try await container.putChunk(second)
        let new = try await Scene.commit(container, file, base: old.version, Scene.state("a.txt", second))
        let newestKeys = try #require(container.state.withLock { $0.keys[1] })
        #expect(try await server.missingChunks([newestKeys.chunkID(for: first.hash)]).count == 1)

        let versions = try await container.history(of: file, limit: 10)
        #expect(versions.map(\.entry) == [new, old])
        let restored = try await Scene.commit(container, file, base: new.version, versions[1].entry.state)
        #expect(restored.state.manifest == old.state.manifest)
        #expect(try await server.missingChunks([newestKeys.chunkID(for: first.hash)]).isEmpty)
        #expect(try await container.chunk(first.hash) == first)
        #expect(try await container.history(of: file, limit: 10).count == 3)
        #expect(container.alarm == nil)
    }

    /// Deletions committed together share a ledger entry (consecutive versions in it): the trash
    /// pages through them one at a time, newest first, each once.
    @Test func theTrashPagesThroughDeletionsOfOneCommit() async throws {
        let server = InMemoryContainer()
        let container = try await SealedContainer.create(
            in: server, as: .generate(), recovery: .generate(), deviceName: "w")
        var made: [RemoteEntry] = []
        for name in ["a", "b", "c"] {
            let outcome = try await container.commit(
                CommitRequest(
                    id: .random(), baseVersion: 0,
                    change: .put(
                        EntryState(
                            parent: .root, name: Array(name.utf8), kind: .directory, mode: 0o755, mtime: 0, size: 0)),
                    device: "w"))
            guard case .committed(let entry) = outcome else { throw SealedError.malformed("\(outcome)") }
            made.append(entry)
        }
        let deleted = try await container.commit(
            batch: made.map { CommitRequest(id: $0.id, baseVersion: $0.version, change: .delete, device: "w") })
        let versions = deleted.compactMap { if case .committed(let entry) = $0 { entry.version } else { nil } }
        #expect(versions.count == 3 && versions[1] == versions[0] + 1 && versions[2] == versions[1] + 1)
        var paged: [EntryVersion] = []
        var before: EntryVersion?
        while true {
            let page = try await container.deletedEntries(before: before, limit: 1)
            guard let item = page.first else { break }
            paged.append(item.entry.version)
            before = item.entry.version
        }
        #expect(paged == versions.reversed())
        #expect(try await container.deletedEntries(before: .max, limit: 10).count == 3)
    }

    @Test func aVersionNoLedgerEntryNamedIsCaught() async throws {
        let scene = try await Scene()
        let server = LyingHistoryServer(scene.honest)
        // A record sealed with the container's own key (as a member's client would), that no
        // ledger entry names: shown as the file's oldest version.
        let keys = scene.keys
        let secret = Scene.state("planted.txt", scene.first)
        let sealed = SealedRecord.seal(secret, of: scene.file, keys: keys)
        let planted = RemoteEntry(
            id: scene.file, version: 1, isDeleted: false, device: "w",
            state: OpaqueEntry.state(
                of: scene.file, sealed: sealed, chunks: OpaqueEntry.serverManifest(of: secret, keys: keys)))
        server.lie { versions in
            guard let last = versions.last, last.entry.id == planted.id else { return versions }
            return versions + [HistoricVersion(entry: planted, committedAt: 1, replacedAt: last.committedAt)]
        }
        let file = scene.file
        await Self.expectAlarm(scene.reader(through: server), "a planted version") {
            try await $0.history(of: file, limit: 10)
        }
    }

    @Test func aSwappedHistoricRecordIsCaught() async throws {
        let scene = try await Scene()
        let file = scene.file
        // Another entry's record (vouched for that entry) shown as an old version of the file.
        let other = try #require(try await scene.honest.history(of: scene.gone, limit: 10).last)
        let server = LyingHistoryServer(scene.honest)
        server.lie { versions in
            versions.enumerated().map { index, version in
                guard index == versions.count - 1 else { return version }
                var swapped = version
                swapped.entry.state.xattrs = other.entry.state.xattrs
                return swapped
            }
        }
        await Self.expectAlarm(scene.reader(through: server), "another entry's record") {
            try await $0.history(of: file, limit: 10)
        }

        // The file's own old record shown as its current version (both were vouched, once).
        let rolled = LyingHistoryServer(scene.honest)
        rolled.lie { versions in
            guard versions.count == 2 else { return versions }
            var swapped = versions
            (swapped[0].entry.state.xattrs, swapped[1].entry.state.xattrs) =
                (versions[1].entry.state.xattrs, versions[0].entry.state.xattrs)
            return swapped
        }
        await Self.expectAlarm(scene.reader(through: rolled), "the old record as the current one") {
            try await $0.history(of: file, limit: 10)
        }
    }

    @Test func aHistoricVersionWithAnotherManifestIsCaught() async throws {
        let scene = try await Scene()
        let server = LyingHistoryServer(scene.honest)
        server.lie { versions in
            versions.enumerated().map { index, version in
                guard index == versions.count - 1 else { return version }
                var changed = version
                changed.entry.state.manifest = version.entry.state.manifest.map {
                    ChunkRef(hash: $0.hash, length: $0.length * 2)
                }
                return changed
            }
        }
        let file = scene.file
        await Self.expectAlarm(scene.reader(through: server), "another manifest") {
            try await $0.history(of: file, limit: 10)
        }
    }

    @Test func aDeletionNoLedgerEntryNamedIsCaughtInTheTrash() async throws {
        let scene = try await Scene()
        let server = LyingHistoryServer(scene.honest)
        // The live file's current version, listed in the trash as if it had been deleted.
        let current = try #require(try await scene.honest.history(of: scene.file, limit: 1).first)
        server.lie { versions in
            var fake = current
            fake.entry.isDeleted = true
            return [fake] + versions
        }
        await Self.expectAlarm(scene.reader(through: server), "a deletion in the trash") {
            try await $0.deletedEntries(before: nil, limit: 10)
        }
    }
}
