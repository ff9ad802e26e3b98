import Foundation
import Glibc
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// A folder this device committed under its temporary name (`.syncfs-moving-<ID>`, while local
/// renames rotated names) whose real rename never followed: the parked name must not become the
/// folder's name on every machine. In the serialized engine suite.
extension SyncEngineTests {
    /// The container holds A's parked commit and A has nothing queued for the entry (its real
    /// rename was overtaken): A renames it back to its last real name, and B follows.
    @Test func aFolderLeftParkedByThisDeviceGetsItsRealNameBack() async throws {
        let pair = try SyncedPair()
        let id = try await syncedFolder("d1", pair)

        let parked = try await commitParked(id, in: pair.container, device: pair.a.fs.deviceIdentity)

        try await waitForRealName(id, "d1", in: pair.container, after: parked.version)
        try await expectNamed("d1", pair)
    }

    /// Another mount changed the parked folder (its mode) after A parked it, so the newest
    /// version is not A's: A, which parked it, still gives it its name back.
    @Test func aParkedFolderAnotherMountChangedGetsItsRealNameBack() async throws {
        let (pair, faulty) = try pairWithFaultsOnA()
        let base = pair.container
        let id = try await syncedFolder("d1", pair)

        faulty.startOutage([.changes, .waitForChanges])
        let parked = try await commitParked(id, in: base, device: pair.a.fs.deviceIdentity)
        var state = parked.state
        state.mode = 0o700
        let changed = try await base.commit(
            CommitRequest(id: id, baseVersion: parked.version, change: .put(state), device: "elsewhere"))
        guard case .committed(let changedEntry) = changed else { throw CancellationError() }
        faulty.endOutage()

        try await waitForRealName(id, "d1", in: base, after: changedEntry.version)
        try await expectNamed("d1", pair)
    }

    /// The history cannot be read when A finds its parked folder (an outage's tail): A tries
    /// again later instead of leaving the name for good.
    @Test func aParkedFolderWhoseHistoryFailedOnceGetsItsRealNameBack() async throws {
        let (pair, faulty) = try pairWithFaultsOnA()
        let base = pair.container
        let id = try await syncedFolder("d1", pair)

        faulty.failNext(2, .history, with: .unavailable("injected"))
        let parked = try await commitParked(id, in: base, device: pair.a.fs.deviceIdentity)

        try await waitForRealName(id, "d1", in: base, after: parked.version)
        #expect(faulty.callCount(.history) >= 3, "asked again after the failures")
    }

    /// A hostile container's history offers names that must never reach the tree (`..`, a
    /// slash, another entry's version) above the real one: they are dropped where the history
    /// enters (`HistoryReader`), and the folder gets the one valid name.
    @Test func aForgedHistoryCannotNameTheUnparkedFolder() async throws {
        let hostile = HostileContainer()
        let pair = try SyncedPair(container: hostile)
        let id = try await syncedFolder("d1", pair)
        let real = try #require(try await hostile.entry(id))

        func version(_ name: String, _ number: EntryVersion, of other: FileID? = nil) -> HistoricVersion {
            var entry = real
            entry.id = other ?? id
            entry.version = number
            entry.state.name = Array(name.utf8)
            entry.device = pair.a.fs.deviceIdentity
            return HistoricVersion(entry: entry, committedAt: 1, replacedAt: 2)
        }
        let parkingName = String(decoding: ParkingName.of(id), as: UTF8.self)
        hostile.answerHistory(
            of: id,
            with: [
                version(parkingName, 1_000), version("..", 999), version("a/b", 998),
                version("stolen", 997, of: FileID.random()), version("d1", real.version),
            ])
        let parked = try await commitParked(id, in: hostile, device: pair.a.fs.deviceIdentity)

        try await waitForRealName(id, "d1", in: hostile, after: parked.version)
        try await expectNamed("d1", pair)
    }

    /// Another device's parked entry is left alone: that device may be in the middle of its
    /// rotation, and only it knows the entry's real name.
    @Test func aFolderParkedByAnotherDeviceIsLeftToIt() async throws {
        let pair = try SyncedPair()
        let id = try await syncedFolder("d1", pair)

        let parked = try await commitParked(id, in: pair.container, device: "elsewhere")

        let parkingName = String(decoding: ParkingName.of(id), as: UTF8.self)
        try await eventually("the parked name on A and B") {
            try pair.a.childNames() == [parkingName] && pair.b.childNames() == [parkingName]
        }
        try await Task.sleep(for: .milliseconds(300))  // scenario: time for a rename that must not come
        try await pair.settle()
        #expect(try await pair.container.entry(id)?.version == parked.version, "nobody renamed it")
    }

    /// What failed a randomized mount test: A parks `d1`, its real rename waits out an outage,
    /// A deletes the folder, B (which sees the parked name) puts something in it. The container
    /// refuses A's delete and the folder comes back on A: under its real name, with B's file in
    /// it, on both sides.
    @Test func aParkedFolderDeletedHereThatComesBackGetsItsRealName() async throws {
        let (pair, faulty) = try pairWithFaultsOnA()
        let base = pair.container
        let id = try await syncedFolder("d1", pair)

        // A does not hear of the park (its follower is cut off); B does, and adds to the folder.
        faulty.startOutage([.changes, .waitForChanges])
        _ = try await commitParked(id, in: base, device: pair.a.fs.deviceIdentity)
        let parkingName = String(decoding: ParkingName.of(id), as: UTF8.self)
        try await eventually("the parked name on B") { try pair.b.childNames() == [parkingName] }
        _ = try pair.b.makeFile("added.txt", in: try pair.b.lookupIno(parkingName), contents: Array("b".utf8))
        try await eventually("B's file in the container") {
            pair.b.fs.outbox.items.isEmpty && pair.b.fs.outbox.inFlightCount == 0
        }

        try pair.a.fs.rmdir(parent: .root, name: FileName("d1"))
        try await eventually("the folder back on A, under its real name") {
            try pair.a.childNames() == ["d1"]
        }
        faulty.endOutage()
        try await pair.settle()
        try await eventually("d1 with B's file on both sides") {
            try contents(pair.a, "d1/added.txt") == Array("b".utf8) && pair.b.childNames() == ["d1"]
                && contents(pair.b, "d1/added.txt") == Array("b".utf8)
        }
    }

    /// A pair whose mount A talks to the container through a fault injector.
    private func pairWithFaultsOnA() throws -> (SyncedPair, FaultInjectingContainer) {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        return (try SyncedPair(container: base, viewOfA: faulty), faulty)
    }

    /// A folder made on A and synced to B; its file ID.
    private func syncedFolder(_ name: String, _ pair: SyncedPair) async throws -> FileID {
        let folder = try pair.a.mkdir(name)
        let id = try #require(pair.a.fileID(of: folder))
        try await eventually("\(name) on B") { try pair.b.childNames() == [name] }
        try await pair.settle()
        return id
    }

    /// Waits until A and B both hold just `name` at the top.
    private func expectNamed(_ name: String, _ pair: SyncedPair) async throws {
        try await eventually("\(name) on A and B") {
            try pair.a.childNames() == [name] && pair.b.childNames() == [name]
        }
    }

    /// Waits (up to 20 s) until the container holds `id` at a version past `version`, and
    /// expects it named `name` then.
    private func waitForRealName(
        _ id: FileID, _ name: String, in container: any Container, after version: EntryVersion
    ) async throws {
        try await eventually("a commit of \(name) past the parked version") {
            try await container.entry(id).map { $0.version > version } ?? false
        }
        let entry = try #require(try await container.entry(id))
        #expect(entry.version > version, "nothing was committed after the parked version")
        #expect(String(decoding: entry.state.name, as: UTF8.self) == name)
    }

    /// Commits `id` under its parking name as `device` would, on top of its current version.
    private func commitParked(_ id: FileID, in container: any Container, device: String) async throws -> RemoteEntry {
        let current = try #require(try await container.entry(id))
        var state = current.state
        state.name = ParkingName.of(id)
        let outcome = try await container.commit(
            CommitRequest(id: id, baseVersion: current.version, change: .put(state), device: device))
        guard case .committed(let entry) = outcome else {
            Issue.record("the parked commit: \(outcome)")
            throw CancellationError()
        }
        return entry
    }
}
