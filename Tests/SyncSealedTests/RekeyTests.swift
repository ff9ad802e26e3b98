import SyncBackend
import SyncBackendTesting
import Synchronization
import Testing

@testable import SyncSealed

/// A server that runs the test's `hook` before each all-or-nothing commit it is sent (with the
/// call's number, from 1): another device's commit slipped in first, or a connection lost.
final class HookedServer: ForwardingTestContainer, Sendable {
    let base: InMemoryContainer
    private let calls = Mutex(0)
    private let hook: @Sendable (Int) async throws(ContainerProtocolError) -> Void

    init(_ base: InMemoryContainer, hook: @escaping @Sendable (Int) async throws(ContainerProtocolError) -> Void) {
        self.base = base
        self.hook = hook
    }

    func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError) -> AllOrNothingOutcome {
        let call = calls.withLock { calls in
            calls += 1
            return calls
        }
        try await hook(call)
        return try await base.commit(allOrNothing: requests)
    }
}

/// `rekey`: after a member is removed, every live record and every chunk the live tree references
/// is re-sealed under the newest epoch, so the removed device's keys open none of them; content
/// is unchanged for the members; a rerun does nothing; an interrupted run is finished by the next;
/// an entry another device changes meanwhile keeps that device's version.
@Suite("Sealed container rekey")
struct RekeyTests {
    /// A container written by `laptop` with `phone` a member: a folder, two files in it sharing a
    /// chunk, an empty file, and a deleted file (a tombstone).
    struct Scene {
        let server = InMemoryContainer()
        let laptop = DeviceKeys.generate()
        let phone = DeviceKeys.generate()
        let recovery = RecoveryKey.generate()
        let writer: SealedContainer
        let folder = FileID.random()
        let report = FileID.random()
        let photo = FileID.random()
        let empty = FileID.random()
        let deleted = FileID.random()
        let chunks: [EncodedChunk]
        /// The live entries' states as written.
        let states: [FileID: EntryState]

        init() async throws {
            writer = try await SealedContainer.create(
                in: server, as: laptop, recovery: recovery, deviceName: "laptop")
            try await writer.admit(phone.identity)
            chunks = ["the quarterly report, first part", "a part both files share", "the photo's own bytes"].map {
                Array($0.utf8).withUnsafeBytes { ChunkCodec.encode($0) }
            }
            try await writer.putChunks(chunks)
            func file(_ name: String, in parent: FileID, _ parts: [EncodedChunk]) -> EntryState {
                let manifest = parts.map { ChunkRef(hash: $0.hash, length: Int64($0.plainLength)) }
                return EntryState(
                    parent: parent, name: Array(name.utf8), kind: .file, mode: 0o644, mtime: 7,
                    size: manifest.reduce(0) { $0 + $1.length }, manifest: manifest)
            }
            var states: [FileID: EntryState] = [
                folder: EntryState(
                    parent: .root, name: Array("Taxes".utf8), kind: .directory, mode: 0o755, mtime: 3, size: 0)
            ]
            states[report] = file("report.pdf", in: folder, [chunks[0], chunks[1]])
            states[photo] = file("photo.jpg", in: folder, [chunks[1], chunks[2]])
            states[empty] = file("empty.txt", in: .root, [])
            states[deleted] = file("deleted.txt", in: .root, [chunks[0]])
            let requests = [folder, report, photo, empty, deleted].map {
                CommitRequest(id: $0, baseVersion: 0, change: .put(states[$0]!), device: "laptop")
            }
            #expect(try await writer.commit(allOrNothing: requests).isCommitted)
            let version = try #require(try await writer.entry(deleted)?.version)
            #expect(
                try await writer.commit(allOrNothing: [
                    CommitRequest(id: deleted, baseVersion: version, change: .delete, device: "laptop")
                ]).isCommitted)
            states[deleted] = nil
            self.states = states
        }

        var live: [FileID] { Array(states.keys) }

        /// The epoch secrets the keyring gives `device` (what it keeps after its removal).
        func secrets(of device: DeviceKeys) throws -> [EpochKeys] {
            let keyring = try #require(writer.state.withLock { $0.view.keyring })
            return try keyring.secrets(for: device).map {
                EpochKeys(secret: $0.value, container: keyring.container, epoch: $0.key)
            }
        }
    }

    /// The record the server holds for `id`, and the chunks its server manifest references.
    static func stored(_ id: FileID, in server: InMemoryContainer) async throws -> ([UInt8], [EncodedChunk]) {
        let entry = try #require(try await server.entry(id))
        let sealed = try #require(OpaqueEntry.sealed(from: entry.state, of: id))
        var chunks: [EncodedChunk] = []
        for reference in entry.state.manifest { chunks.append(try await server.chunk(reference.hash)) }
        return (sealed, chunks)
    }

    @Test func afterRemoveAndRekeyTheRemovedDeviceOpensNoLiveRecordOrChunk() async throws {
        let scene = try await Scene()
        // The phone could read everything before its removal.
        let phoneKeys = try scene.secrets(of: scene.phone)
        #expect(phoneKeys.map(\.epoch) == [0])
        let (before, _) = try await Self.stored(scene.report, in: scene.server)
        #expect(try SealedRecord.open(before, of: scene.report, keys: phoneKeys[0]) == scene.states[scene.report])

        try await scene.writer.remove(scene.phone.identity.signing)
        let report = try await scene.writer.rekey(newEpoch: false)
        #expect(report.epoch == 1 && !report.startedEpoch)
        #expect(report.entries == scene.live.count, "\(report)")
        #expect(report.chunks == 3 && report.bytes == Int64(scene.chunks.map(\.plainLength).reduce(0, +)), "\(report)")
        #expect(report.skipped == 0 && report.remaining == 0)
        #expect(report.oldTombstones == 1, "the deleted file keeps its old record")

        let newest = try #require(try scene.secrets(of: scene.laptop).first { $0.epoch == 1 })
        for id in scene.live {
            let (sealed, chunks) = try await Self.stored(id, in: scene.server)
            #expect(try SealedRecord.epoch(of: sealed) == 1, "entry \(id)")
            #expect(try SealedRecord.open(sealed, of: id, keys: newest) == scene.states[id])
            #expect(throws: SealedError.self) { try SealedRecord.open(sealed, of: id, keys: phoneKeys[0]) }
            let manifest = try #require(scene.states[id]?.manifest)
            #expect(chunks.count == manifest.count)
            for (chunk, reference) in zip(chunks, manifest) {
                let box = SealedChunk(id: chunk.hash, envelope: chunk.payload)
                #expect(try SealedChunkCodec.epoch(of: chunk.payload) == 1)
                // The re-sealed copy holds the very bytes written.
                let original = try #require(scene.chunks.first { $0.hash == reference.hash })
                #expect(try SealedChunkCodec.open(box, as: reference.hash, keys: newest) == original)
                #expect(throws: SealedError.self) {
                    try SealedChunkCodec.open(box, as: reference.hash, keys: phoneKeys[0])
                }
            }
        }

        // A remaining member, reading afresh, sees the same tree and the same bytes.
        let reader = try await SealedContainer.open(scene.server, as: scene.laptop, knownHead: scene.writer.head)
        for (id, state) in scene.states {
            #expect(try await reader.entry(id)?.state == state, "entry \(id)")
        }
        #expect(try await reader.entry(scene.deleted)?.isDeleted == true)
        for chunk in scene.chunks {
            #expect(try await reader.chunk(chunk.hash) == chunk)
        }
        // So does the recovery key.
        let recovered = try await SealedContainer.open(scene.server, as: scene.recovery.deviceKeys, knownHead: nil)
        #expect(try await recovered.entry(scene.report)?.state == scene.states[scene.report])
    }

    @Test func aRerunDoesNothing() async throws {
        let scene = try await Scene()
        try await scene.writer.remove(scene.phone.identity.signing)
        _ = try await scene.writer.rekey(newEpoch: false)
        let head = try #require(scene.writer.head)
        let feed = try await scene.server.changes(after: .beginning, limit: 1_000).cursor

        let again = try await scene.writer.rekey(newEpoch: false)
        #expect(again.entries == 0 && again.chunks == 0 && again.bytes == 0 && again.remaining == 0, "\(again)")
        #expect(scene.writer.head == head, "no commit")
        #expect(try await scene.server.changes(after: feed, limit: 1_000).entries.isEmpty, "nothing stored")
    }

    @Test func aNewEpochIsForEveryMemberAndTheContentStaysTheSame() async throws {
        let scene = try await Scene()
        let report = try await scene.writer.rekey(newEpoch: true)
        #expect(report.startedEpoch && report.epoch == 1 && report.entries == scene.live.count, "\(report)")
        // Nobody was removed: the phone holds the new epoch too, and reads everything.
        #expect(try scene.secrets(of: scene.phone).map(\.epoch).sorted() == [0, 1])
        #expect(try await scene.writer.members().devices.count == 2)
        let phone = try await SealedContainer.open(scene.server, as: scene.phone, knownHead: nil)
        for (id, state) in scene.states {
            #expect(try await phone.entry(id)?.state == state)
            let (sealed, _) = try await Self.stored(id, in: scene.server)
            #expect(try SealedRecord.epoch(of: sealed) == 1)
        }
        for chunk in scene.chunks { #expect(try await phone.chunk(chunk.hash) == chunk) }
    }

    /// The connection is lost before the first re-sealing commit arrives (after its chunks were
    /// uploaded): the next run, as after a crash, re-seals every entry and sends no chunk again.
    @Test func aRunInterruptedBeforeItsCommitIsFinishedByTheNext() async throws {
        let scene = try await Scene()
        try await scene.writer.remove(scene.phone.identity.signing)
        let flaky = HookedServer(scene.server) { call throws(ContainerProtocolError) in
            if call == 1 { throw .storageFailure("the connection dropped") }
        }
        let interrupted = SealedContainer(wrapping: flaky, as: scene.laptop, knownHead: scene.writer.head)
        await #expect(throws: ContainerProtocolError.self) { _ = try await interrupted.rekey(newEpoch: false) }
        for id in scene.live {
            let (sealed, _) = try await Self.stored(id, in: scene.server)
            #expect(try SealedRecord.epoch(of: sealed) == 0, "nothing committed yet")
        }

        let rerun = SealedContainer(wrapping: scene.server, as: scene.laptop, knownHead: scene.writer.head)
        let report = try await rerun.rekey(newEpoch: false)
        #expect(report.entries == scene.live.count && report.chunks == 0 && report.remaining == 0, "\(report)")
        for id in scene.live {
            let (sealed, _) = try await Self.stored(id, in: scene.server)
            #expect(try SealedRecord.epoch(of: sealed) == 1)
        }
    }

    /// Another member renames the report just before the re-sealing commit arrives: the commit
    /// loses the race, is decided again, and leaves the report as the other member made it.
    @Test func anEntryChangedMeanwhileByAnotherDeviceIsNotOverwritten() async throws {
        let scene = try await Scene()
        let desk = DeviceKeys.generate()
        try await scene.writer.admit(desk.identity)
        try await scene.writer.remove(scene.phone.identity.signing)
        let deskContainer = try await SealedContainer.open(scene.server, as: desk, knownHead: nil)
        var renamed = try #require(scene.states[scene.report])
        renamed.name = Array("report-final.pdf".utf8)
        let target = scene.report
        let racing = HookedServer(scene.server) { [renamed] call throws(ContainerProtocolError) in
            guard call == 1 else { return }
            let current = try await deskContainer.entry(target)
            let outcome = try await deskContainer.commit(
                CommitRequest(
                    id: target, baseVersion: current?.version ?? 0, change: .put(renamed), device: "desk"))
            guard case .committed = outcome else { throw .storageFailure("the desk's rename: \(outcome)") }
        }
        let rekeying = SealedContainer(wrapping: racing, as: scene.laptop, knownHead: scene.writer.head)
        let report = try await rekeying.rekey(newEpoch: false)
        #expect(report.skipped == 1 && report.entries == scene.live.count - 1 && report.remaining == 0, "\(report)")

        let reader = try await SealedContainer.open(scene.server, as: scene.laptop, knownHead: rekeying.head)
        let entry = try #require(try await reader.entry(target))
        #expect(entry.state == renamed && entry.device == "desk", "the desk's version stays")
        for id in scene.live {
            let (sealed, _) = try await Self.stored(id, in: scene.server)
            #expect(try SealedRecord.epoch(of: sealed) == 1, "entry \(id)")
        }
    }

    /// Many entries: several commits of a bounded size, each with its ledger entry.
    @Test func manyEntriesAreReSealedInBatches() async throws {
        let server = InMemoryContainer()
        let laptop = DeviceKeys.generate()
        let writer = try await SealedContainer.create(
            in: server, as: laptop, recovery: .generate(), deviceName: "laptop")
        let count = SealedContainer.rekeyBatchEntries * 2 + 3
        let requests = (0..<count).map { index in
            CommitRequest(
                id: .random(), baseVersion: 0,
                change: .put(
                    EntryState(
                        parent: .root, name: Array("folder \(index)".utf8), kind: .directory, mode: 0o755, mtime: 0,
                        size: 0)),
                device: "laptop")
        }
        #expect(try await writer.commit(allOrNothing: requests).isCommitted)
        _ = try await writer.members()  // reads the commit just made
        let before = try #require(writer.head?.sequence)
        let report = try await writer.rekey(newEpoch: true)
        #expect(report.entries == count && report.remaining == 0)
        // One ledger entry for the new epoch, then three batches.
        #expect(writer.head?.sequence == before + 4)
    }

    @Test func aBatchIsBoundedByEntriesAndChunkReferences() {
        let hash = Array("x".utf8).withUnsafeBytes { ChunkCodec.hash($0) }
        func entry(references: Int) -> RemoteEntry {
            RemoteEntry(
                id: .random(), version: 1, isDeleted: false, device: "d",
                state: EntryState(
                    parent: .root, name: [0x61], kind: .file, mode: 0o644, mtime: 0, size: Int64(references),
                    manifest: Array(repeating: ChunkRef(hash: hash, length: 1), count: references)))
        }
        let small = (0..<300).map { _ in entry(references: 1) }
        #expect(SealedContainer.rekeyBatch(of: small).count == SealedContainer.rekeyBatchEntries)
        let large = entry(references: SealedContainer.rekeyBatchChunkReferences + 5)
        #expect(SealedContainer.rekeyBatch(of: [large] + small).count == 1, "a large entry goes alone")
        let half = SealedContainer.rekeyBatchChunkReferences / 2
        #expect(SealedContainer.rekeyBatch(of: [entry(references: half), entry(references: half), large]).count == 2)
        #expect(SealedContainer.rekeyBatch(of: []).isEmpty)
    }
}
