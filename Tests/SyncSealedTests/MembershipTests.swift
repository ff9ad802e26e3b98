import SyncBackend
import Testing

@testable import SyncSealed

/// Admitting and removing member devices: a device admitted reads the whole history; a device
/// removed reads nothing written after its removal, and cannot write.
@Suite("Sealed container members")
struct MembershipTests {
    static func folder(_ name: String) -> EntryState {
        EntryState(parent: .root, name: Array(name.utf8), kind: .directory, mode: 0o755, mtime: 0, size: 0)
    }

    static func put(_ container: SealedContainer, _ name: String) async throws -> FileID {
        let id = FileID.random()
        let outcome = try await container.commit(
            CommitRequest(id: id, baseVersion: 0, change: .put(folder(name)), device: "d"))
        guard case .committed = outcome else { throw SealedError.malformed("not committed: \(outcome)") }
        return id
    }

    @Test func anAdmittedDeviceReadsTheHistoryAndARemovedOneNothingAfter() async throws {
        let server = InMemoryContainer()
        let laptop = DeviceKeys.generate()
        let phone = DeviceKeys.generate()
        let first = try await SealedContainer.create(
            in: server, as: laptop, recovery: .generate(), deviceName: "laptop")
        let before = try await Self.put(first, "written before the phone joined")

        // The phone is not a member yet.
        await #expect(throws: ContainerProtocolError.self) {
            _ = try await SealedContainer.open(server, as: phone, knownHead: nil)
        }
        // Both devices show the same safety code for the phone.
        let code = try await first.safetyCode(for: phone.identity)
        #expect(code.count == 35)
        try await first.admit(phone.identity)
        let second = try await SealedContainer.open(server, as: phone, knownHead: nil)
        #expect(try await second.safetyCode(for: phone.identity) == code)
        #expect(try await second.entry(before)?.state.name == Array("written before the phone joined".utf8))
        let byPhone = try await Self.put(second, "written by the phone")
        #expect(try await first.entry(byPhone)?.state.kind == .directory)
        #expect(try await first.members().devices.count == 2)

        // The phone is removed: a new epoch starts, and what is written after is not for it.
        try await first.remove(phone.identity.signing)
        #expect(try await first.members().devices == [laptop.identity])
        let after = try await Self.put(first, "written after the phone was removed")
        let stored = try #require(try await server.entry(after))
        let sealed = try #require(OpaqueEntry.sealed(from: stored.state, of: after))
        #expect(try SealedRecord.epoch(of: sealed) == 1)
        let phoneKeys = try #require(
            try await server.changes(after: .beginning, limit: 1_000).entries.compactMap { entry -> Keyring? in
                guard let bytes = OpaqueEntry.sealed(from: entry.state, of: entry.id) else { return nil }
                return try? Keyring(encoded: bytes)
            }.last)
        #expect(try phoneKeys.secrets(for: phone).keys.sorted() == [0], "the phone holds epoch 0's secret only")
        for epoch in try phoneKeys.secrets(for: phone) {
            let keys = EpochKeys(secret: epoch.value, container: phoneKeys.container, epoch: epoch.key)
            #expect(throws: SealedError.self) { try SealedRecord.open(sealed, of: after, keys: keys) }
        }
        // The removed phone's own wrapper shows nothing of it and writes nothing.
        await #expect(throws: ContainerProtocolError.self) { _ = try await second.entry(after) }
        await #expect(throws: ContainerProtocolError.self) { _ = try await Self.put(second, "after removal") }
        #expect(try await first.entry(after) != nil)
    }

    @Test func theRecoveryKeyCanReadEveryEpoch() async throws {
        let server = InMemoryContainer()
        let laptop = DeviceKeys.generate()
        let recovery = RecoveryKey.generate()
        let first = try await SealedContainer.create(in: server, as: laptop, recovery: recovery, deviceName: "laptop")
        let phone = DeviceKeys.generate()
        try await first.admit(phone.identity)
        try await first.remove(phone.identity.signing)
        let id = try await Self.put(first, "in epoch 1")
        // The recovery key opens the container as a member of every epoch.
        let recovered = try await SealedContainer.open(server, as: recovery.deviceKeys, knownHead: nil)
        #expect(try await recovered.entry(id)?.state.name == Array("in epoch 1".utf8))
    }

    @Test func aDeviceAsksToJoinAndIsAdmittedWhenTheCodesMatch() async throws {
        let server = InMemoryContainer()
        let laptop = DeviceKeys.generate()
        let first = try await SealedContainer.create(
            in: server, as: laptop, recovery: .generate(), deviceName: "laptop")
        _ = try await Self.put(first, "shared")
        let phone = DeviceKeys.generate()
        let (shownByPhone, seen) = try await SealedContainer.requestToJoin(server, as: phone, name: "phone")
        try await first.catchUp()
        #expect(seen == first.head)
        // The join request is outside the ledger: it raises no alarm, and the member lists it.
        let requests = try await first.joinRequests()
        #expect(requests.map(\.request.device) == [phone.identity])
        #expect(requests.first?.code == shownByPhone)
        #expect(requests.first?.request.name == "phone")
        #expect(requests.first?.request.seen == seen)
        try await first.approve(try #require(requests.first?.request))
        #expect(try await first.joinRequests().isEmpty)
        let second = try await SealedContainer.open(server, as: phone, knownHead: seen)
        #expect(try await second.members().devices.count == 2)
    }

    @Test func aRequestFromBeforeARemovalMustBeMadeAgain() async throws {
        let server = InMemoryContainer()
        let laptop = DeviceKeys.generate()
        let first = try await SealedContainer.create(in: server, as: laptop, recovery: .generate(), deviceName: "l")
        let old = DeviceKeys.generate()
        try await first.admit(old.identity)
        let phone = DeviceKeys.generate()
        _ = try await SealedContainer.requestToJoin(server, as: phone, name: "phone")
        try await first.remove(old.identity.signing)
        let stale = try #require(try await first.joinRequests().first?.request)
        do {
            try await first.approve(stale)
            Issue.record("a request from before the removal was approved")
        } catch {
            #expect(error.description.contains("before the members last changed"), "\(error)")
        }
        #expect(try await first.members().devices == [laptop.identity])
        // Asked anew, after the removal, it is admitted.
        _ = try await SealedContainer.requestToJoin(server, as: phone, name: "phone")
        try await first.approve(try #require(try await first.joinRequests().first?.request))
        #expect(try await first.members().devices.count == 2)
    }

    /// The attack the seen head closes: a removed member and the server keep a copy of the
    /// container from before the removal, in which the removed member admits the new device, so
    /// that it would write for keys the removed member holds.
    @Test func aNewDeviceIsNotFooledByAForkWhereARemovedMemberAdmitsIt() async throws {
        let server = InMemoryContainer()
        let laptop = DeviceKeys.generate()
        let first = try await SealedContainer.create(in: server, as: laptop, recovery: .generate(), deviceName: "l")
        let removed = DeviceKeys.generate()
        try await first.admit(removed.identity)
        // The server copies the container as it is now.
        let fork = InMemoryContainer()
        let all = try await server.changes(after: .beginning, limit: 1_000).entries
        for entry in all.sorted(by: { $0.version < $1.version }) {
            #expect(
                try await fork.commit(
                    CommitRequest(id: entry.id, baseVersion: 0, change: .put(entry.state), device: entry.device)
                ).isCommitted)
        }
        try await first.remove(removed.identity.signing)
        // The phone asks on the real container and its owner approves on the laptop.
        let phone = DeviceKeys.generate()
        let (_, seen) = try await SealedContainer.requestToJoin(server, as: phone, name: "phone")
        let printed = try await first.approve(try #require(try await first.joinRequests().first?.request))
        // On the fork, the removed member admits the phone too: the admission the phone's owner
        // would confirm there is not the one the laptop printed a code for.
        let onFork = try await SealedContainer.open(fork, as: removed, knownHead: nil)
        try await onFork.admit(phone.identity)
        let forkAdmission = try #require(
            try await SealedContainer(wrapping: fork, as: phone, knownHead: nil).admission(of: phone.identity))
        let realAdmission = try #require(try await first.admission(of: phone.identity))
        #expect(SafetyCode.admissionCode(admission: forkAdmission.digest) != printed)
        #expect(SafetyCode.admissionCode(admission: realAdmission.digest) == printed)
        // Shown the fork, the phone refuses it: it does not run through what the phone saw.
        let fooled = SealedContainer(wrapping: fork, as: phone, knownHead: seen)
        await #expect(throws: ContainerProtocolError.self) { _ = try await fooled.isMember() }
        #expect(fooled.alarm != nil)
        #expect(try await SealedContainer.open(server, as: phone, knownHead: seen).members().devices.count == 2)
    }

    /// The keyring pins when each member was added (what an admission code names): a member
    /// added as if in another entry is refused.
    @Test func aMemberAddedAsIfInAnotherEntryIsCaught() async throws {
        let server = InMemoryContainer()
        let first = try await SealedContainer.create(
            in: server, as: .generate(), recovery: .generate(), deviceName: "l")
        let phone = DeviceKeys.generate()
        await #expect(throws: ContainerProtocolError.self) {
            try await first.changeKeyring { keyring, secrets, _ in
                (keyring.adding(phone.identity, in: 1, secrets: secrets), nil)
            }
        }
        #expect(
            first.alarm?.description.contains("adds a member in another entry") == true,
            "\(String(describing: first.alarm))")
    }

    /// A member that did not see a removal (or a hostile one) seals a record under the old epoch,
    /// which the removed device still holds: the ledger entry that names it is refused.
    @Test func aRecordSealedUnderAnOlderEpochThanItsLedgerEntryIsCaught() async throws {
        let server = InMemoryContainer()
        let laptop = DeviceKeys.generate()
        let first = try await SealedContainer.create(in: server, as: laptop, recovery: .generate(), deviceName: "l")
        let removed = DeviceKeys.generate()
        try await first.admit(removed.identity)
        try await first.remove(removed.identity.signing)
        try await first.catchUp()
        let (head, ring, oldKeys) = try first.state.withLock { state in
            (try #require(state.view.head), try #require(state.view.keyring), try #require(state.keys[0]))
        }
        #expect(ring.newestEpoch == 1)
        let id = FileID.random()
        let record = SealedRecord.seal(Self.folder("for the removed device"), of: id, keys: oldKeys)
        let entry = LedgerEntry(
            container: ring.container, sequence: head.sequence + 1, previous: head.digest, epoch: ring.newestEpoch,
            time: 0, device: "l", changes: [LedgerChange(id: id, digest: SealedRecord.digest(record), deleted: false)],
            signedBy: laptop)
        let ledgerID = LedgerEntry.fileID(of: entry.sequence)
        let stored = try await server.commit(allOrNothing: [
            CommitRequest(
                id: id, baseVersion: 0, change: .put(OpaqueEntry.state(of: id, sealed: record, chunks: [])), device: "l"
            ),
            CommitRequest(
                id: ledgerID, baseVersion: 0,
                change: .put(OpaqueEntry.state(of: ledgerID, sealed: entry.encoded, chunks: [])), device: "l"),
        ])
        #expect(stored.isCommitted)
        let reader = SealedContainer(wrapping: server, as: laptop, knownHead: head)
        await #expect(throws: ContainerProtocolError.self) { _ = try await reader.entry(id) }
        #expect(reader.alarm?.description.contains("epoch 0") == true, "\(String(describing: reader.alarm))")
    }

    /// A server stores a join request of its own (for a key it holds): it raises no alarm and
    /// admits nothing, and shows a code nobody saw on a device of theirs. A request stored at
    /// another device's place (a member's), or bytes that are no request, are lies: an alarm.
    @Test func joinRequestsTheServerMakesAdmitNothing() async throws {
        let server = InMemoryContainer()
        let laptop = DeviceKeys.generate()
        let first = try await SealedContainer.create(in: server, as: laptop, recovery: .generate(), deviceName: "l")
        try await first.catchUp()
        let head = try #require(first.head)
        let servers = DeviceKeys.generate()
        let own = JoinRequest(device: servers, name: "phone", time: 1, seen: head)
        try await Self.store(own.encoded, at: JoinRequest.fileID(of: servers.identity), in: server)
        #expect(try await first.joinRequests().map(\.request) == [own])
        #expect(first.alarm == nil)
        #expect(try await first.members().devices == [laptop.identity])
        #expect(
            try await SealedContainer(wrapping: server, as: servers, knownHead: head).isMember() == false,
            "a listed request is not an admission")

        for bytes in [
            JoinRequest(device: DeviceKeys.generate(), name: "laptop", time: 1, seen: head).encoded,
            [1, 2, 3],
        ] {
            let base = InMemoryContainer()
            let made = try await SealedContainer.create(in: base, as: laptop, recovery: .generate(), deviceName: "l")
            try await made.catchUp()
            // Stored where the laptop's own request would be, but not signed by the laptop.
            try await Self.store(bytes, at: JoinRequest.fileID(of: laptop.identity), in: base)
            await #expect(throws: ContainerProtocolError.self) { _ = try await made.joinRequests() }
            #expect(made.alarm != nil)
        }
    }

    static func store(_ bytes: [UInt8], at id: FileID, in server: InMemoryContainer) async throws {
        #expect(
            try await server.commit(
                CommitRequest(
                    id: id, baseVersion: 0, change: .put(OpaqueEntry.state(of: id, sealed: bytes, chunks: [])),
                    device: "server")
            ).isCommitted)
    }

    @Test func theRecoveryKeyAdmitsANewDeviceOnlyToTheContainerItMade() async throws {
        let server = InMemoryContainer()
        let recovery = RecoveryKey.generate()
        let first = try await SealedContainer.create(
            in: server, as: .generate(), recovery: recovery, deviceName: "laptop")
        let id = try await Self.put(first, "before the laptop was lost")
        let replacement = DeviceKeys.generate()
        let joined = try await SealedContainer.joinWithRecovery(server, recovery: recovery, device: replacement)
        #expect(try await joined.entry(id)?.state.name == Array("before the laptop was lost".utf8))

        // A server makes up a container of its own that names the same recovery key: its genesis
        // is not signed by the recovery key, so the recovery key does not join it.
        let fake = InMemoryContainer()
        let serverDevice = DeviceKeys.generate()
        let id2 = SealedContainerID.random()
        let secret = EpochSecret.random()
        var keyring = Keyring.genesis(
            container: id2, creator: serverDevice.identity, recovery: recovery.deviceKeys.identity, secret: secret)
        keyring = keyring.adding(serverDevice.identity, in: 1, secrets: [0: secret])
        let genesis = SealedCommit(
            sequence: 1, previous: LedgerEntry.genesisPrevious,
            keys: EpochKeys(secret: secret, container: id2, epoch: 0), device: "server", signer: serverDevice,
            time: 0)
        let (requests, _) = genesis.requests(for: [], publishing: keyring)
        #expect(try await fake.commit(allOrNothing: requests).isCommitted)
        await #expect(throws: ContainerProtocolError.self) {
            _ = try await SealedContainer.joinWithRecovery(fake, recovery: recovery, device: .generate())
        }
    }

    @Test func aRecordTooLargeForItsEntryIsRefusedNotACrash() async throws {
        let server = InMemoryContainer()
        let container = try await SealedContainer.create(
            in: server, as: .generate(), recovery: .generate(), deviceName: "laptop")
        let hash = Array("x".utf8).withUnsafeBytes { ChunkCodec.hash($0) }
        let huge = EntryState(
            parent: .root, name: Array("huge.bin".utf8), kind: .file, mode: 0o644, mtime: 0, size: 30_000,
            manifest: Array(repeating: ChunkRef(hash: hash, length: 1), count: 30_000))
        await #expect(throws: ContainerProtocolError.self) {
            _ = try await container.commit(
                CommitRequest(id: .random(), baseVersion: 0, change: .put(huge), device: "d"))
        }
        #expect(try await Self.put(container, "still works afterwards") != .root)
    }
}
