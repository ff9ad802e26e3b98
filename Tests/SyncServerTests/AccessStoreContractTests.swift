import Foundation
import SyncBackend
import SyncPostgres
import SyncPostgresTesting
import SyncServerPostgres
import TestSupport
import Testing

@testable import SyncServer

/// Which `AccessStore` a contract test runs on. PostgreSQL is the services' (`scripts/services.sh`):
/// a fresh scratch database with the schema per test.
enum AccessBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case embedded
    case postgres

    var testDescription: String { rawValue }
}

/// One backend's store for one test, and how to take it away.
struct AccessStoreFixture: Sendable {
    let store: any AccessStore
    /// A second store on the same data, as another server process has.
    let other: any AccessStore
    /// Makes the store unreachable (its connection pool shut down), as an outage would.
    let cutOff: @Sendable () async -> Void
    let close: @Sendable () async -> Void

    static func make(_ backend: AccessBackend) async throws -> AccessStoreFixture {
        switch backend {
        case .embedded:
            let root = try TemporaryDirectory()
            do {
                return AccessStoreFixture(
                    store: EmbeddedAccessStore(store: try TokenStore(root: root.path)),
                    other: EmbeddedAccessStore(store: try TokenStore(root: root.path)),
                    cutOff: {}, close: { root.remove() })
            } catch {
                root.remove()
                throw error
            }
        case .postgres:
            let database = try await PostgresScratchDatabase.create()
            let blobs = try TemporaryDirectory()
            do {
                let settings = try PostgresSettings(url: database.url)
                try await PostgresStore.initialize(settings: settings)
                let store = try await PostgresStore.open(
                    settings: settings, blobs: try LocalChunkBlobStore.create(at: blobs.path))
                let other: PostgresStore
                do {
                    other = try await PostgresStore.open(
                        settings: settings, blobs: try LocalChunkBlobStore.create(at: blobs.path))
                } catch {
                    await store.shutdown()
                    throw error
                }
                return AccessStoreFixture(
                    store: PostgresAccess(store: store), other: PostgresAccess(store: other),
                    cutOff: { await store.shutdown() },
                    close: {
                        await store.shutdown()
                        await other.shutdown()
                        try? await database.drop()
                        blobs.remove()
                    })
            } catch {
                try? await database.drop()
                blobs.remove()
                throw error
            }
        }
    }
}

/// Runs `body` on a fresh store of `backend`, closed afterwards whatever happens.
func withAccessStore(
    _ backend: AccessBackend, _ body: (any AccessStore, AccessStoreFixture) async throws -> Void
) async throws {
    let fixture = try await AccessStoreFixture.make(backend)
    do {
        try await body(fixture.store, fixture)
    } catch {
        await fixture.close()
        throw error
    }
    await fixture.close()
}

/// `AccessStore`'s contract (Sources/SyncServer/Access/AccessStore.swift), the same on every backend:
/// collisions are false, missing rows nil, one-time things happen once, counts stop where they must
/// even under concurrent calls, and an outage throws instead of looking like "no such row".
@Suite struct AccessStoreContractTests {
    private static func digest(_ byte: String) -> String { String(repeating: byte, count: 32) }

    private static func token(_ id: String, containers: [String] = ["box"], created: Int64 = 100) -> TokenRecord {
        TokenRecord(
            id: id, user: "ann", device: "0000d001", containers: containers, role: .viewer, label: "laptop",
            created: created, expires: created + 3_600)
    }

    @Test(arguments: AccessBackend.allCases) func tokensAreFoundByDigestListedAndRevokedOnce(
        backend: AccessBackend
    ) async throws {
        try await withAccessStore(backend) { store, _ async throws in
            #expect(try await store.insertToken(Self.token("0000000b", created: 200), digest: Self.digest("bb")))
            #expect(
                try await store.insertToken(
                    Self.token("0000000a", containers: ["zeta", "alpha", "mid"]), digest: Self.digest("aa")))
            // The same ID, or the same digest, again: false, nothing replaced.
            #expect(try await !store.insertToken(Self.token("0000000a", containers: ["x"]), digest: Self.digest("cc")))
            #expect(try await !store.insertToken(Self.token("0000000c", containers: ["x"]), digest: Self.digest("aa")))

            let found = try #require(try await store.token(digest: Self.digest("aa")))
            var expected = Self.token("0000000a", containers: ["alpha", "mid", "zeta"])
            #expect(found == expected)
            #expect(try await store.token(digest: Self.digest("ee")) == nil)
            #expect(try await store.tokens().map(\.id) == ["0000000a", "0000000b"])

            try await store.touchToken(id: "0000000a", at: 150, address: "192.0.2.7")
            expected.lastUsed = 150
            expected.lastAddress = "192.0.2.7"
            #expect(try await store.token(digest: Self.digest("aa")) == expected)

            #expect(try await store.revokeToken(id: "0000000a", at: 160) == true)
            #expect(try await store.revokeToken(id: "0000000a", at: 170) == false)
            #expect(try await store.revokeToken(id: "ffffffff", at: 170) == nil)
            // A revoked token is still found, with the time of its first revocation.
            expected.revoked = 160
            #expect(try await store.token(digest: Self.digest("aa")) == expected)
            #expect(try await store.token(digest: Self.digest("bb"))?.revoked == nil)
        }
    }

    /// `standing` reads the token with its user, device and memberships, exactly as the separate
    /// reads find them (the PostgreSQL store reads them in one statement).
    @Test(arguments: AccessBackend.allCases) func aTokensStandingIsItsRowsReadTogether(
        backend: AccessBackend
    ) async throws {
        try await withAccessStore(backend) { store, _ async throws in
            #expect(try await store.standing(digest: Self.digest("aa")) == nil)
            #expect(
                try await store.insertToken(
                    Self.token("0000000a", containers: ["box", "doc"]), digest: Self.digest("aa")))
            // Neither user nor device nor membership exists yet: the token alone.
            var expected = TokenStanding(
                token: Self.token("0000000a", containers: ["box", "doc"]), user: nil, device: nil, memberships: [:])
            #expect(try await store.standing(digest: Self.digest("aa")) == expected)

            let ann = UserRecord(name: "ann", passwordHash: "hash", created: 5)
            #expect(try await store.insertUser(ann))
            let laptop = DeviceRecord(id: "0000d001", user: "ann", name: "laptop", created: 10)
            #expect(try await store.insertDevice(laptop))
            try await store.setMembership(MembershipRecord(user: "ann", container: "doc", role: .editor))
            try await store.setMembership(MembershipRecord(user: "ann", container: "box", role: .admin))
            try await store.setMembership(MembershipRecord(user: "bob", container: "box", role: .viewer))
            _ = try await store.revokeDevice(id: "0000d001", at: 20)
            expected.user = try await store.user(named: "ann")
            expected.device = try await store.device(id: "0000d001")
            expected.memberships = ["doc": .editor, "box": .admin]
            #expect(try await store.standing(digest: Self.digest("aa")) == expected)
            #expect(expected.device?.revoked == 20)

            // A container token has no user: nothing else is read.
            let legacy = TokenRecord(
                id: "0000000c", user: nil, device: nil, containers: ["box"], role: .editor, label: "", created: 1,
                expires: nil)
            #expect(try await store.insertToken(legacy, digest: Self.digest("cc")))
            #expect(
                try await store.standing(digest: Self.digest("cc"))
                    == TokenStanding(token: legacy, user: nil, device: nil, memberships: [:]))
        }
    }

    @Test(arguments: AccessBackend.allCases) func usersAreUniqueByNameAndUpdatedOnlyIfTheyExist(
        backend: AccessBackend
    ) async throws {
        try await withAccessStore(backend) { store, _ async throws in
            let bob = UserRecord(name: "bob", passwordHash: "$argon2id$bob", created: 5)
            let ann = UserRecord(name: "ann@example.org", passwordHash: nil, created: 6)
            #expect(try await store.insertUser(bob))
            #expect(try await store.insertUser(ann))
            #expect(try await !store.insertUser(UserRecord(name: "bob", passwordHash: "other", created: 7)))
            #expect(try await store.user(named: "bob") == bob)
            #expect(try await store.user(named: "carl") == nil)
            #expect(try await store.users() == [ann, bob])

            var changed = bob
            changed.passwordHash = "$argon2id$new"
            #expect(try await store.changeUser("bob", .passwordHash("$argon2id$new")) == true)
            changed.totpSecret = "JBSWY3DPEHPK3PXP"
            #expect(try await store.changeUser("bob", .totpSecret("JBSWY3DPEHPK3PXP")) == true)
            // A TOTP step is stored only if later than the last: a replay changes nothing.
            changed.totpLastStep = 42
            #expect(try await store.changeUser("bob", .acceptedTOTPStep(42)) == true)
            #expect(try await store.changeUser("bob", .acceptedTOTPStep(42)) == false)
            #expect(try await store.changeUser("bob", .acceptedTOTPStep(41)) == false)
            changed.disabled = 9
            #expect(try await store.changeUser("bob", .disabled(9)) == true)
            #expect(try await store.user(named: "bob") == changed)
            // A new TOTP secret forgets the last step; each change touched only its own columns.
            #expect(try await store.changeUser("bob", .totpSecret(nil)) == true)
            changed.totpSecret = nil
            changed.totpLastStep = nil
            #expect(try await store.user(named: "bob") == changed)
            #expect(try await store.changeUser("carl", .disabled(1)) == nil)
            #expect(try await store.changeUser("carl", .acceptedTOTPStep(1)) == nil)
            #expect(try await store.user(named: "carl") == nil)
        }
    }

    @Test(arguments: AccessBackend.allCases) func devicesAreListedPerUserAndRevokedOnce(
        backend: AccessBackend
    ) async throws {
        try await withAccessStore(backend) { store, _ async throws in
            let laptop = DeviceRecord(id: "0000d001", user: "ann", name: "laptop", created: 10)
            let phone = DeviceRecord(id: "0000d002", user: "bob", name: "phone", created: 11)
            let desk = DeviceRecord(id: "0000d003", user: "ann", name: "desk", created: 12)
            for device in [desk, laptop, phone] { #expect(try await store.insertDevice(device)) }
            #expect(try await !store.insertDevice(DeviceRecord(id: "0000d001", user: "bob", name: "x", created: 1)))
            #expect(try await store.device(id: "0000d002") == phone)
            #expect(try await store.device(id: "0000d009") == nil)
            #expect(try await store.devices(user: "ann") == [laptop, desk])
            #expect(try await store.devices(user: nil) == [laptop, phone, desk])
            #expect(try await store.devices(user: "carl") == [])

            #expect(try await store.revokeDevice(id: "0000d001", at: 20) == true)
            #expect(try await store.revokeDevice(id: "0000d001", at: 21) == false)
            #expect(try await store.revokeDevice(id: "0000d009", at: 21) == nil)
            #expect(try await store.device(id: "0000d001")?.revoked == 20)
        }
    }

    @Test(arguments: AccessBackend.allCases) func aMembershipIsOneRolePerUserAndContainer(
        backend: AccessBackend
    ) async throws {
        try await withAccessStore(backend) { store, _ async throws in
            try await store.setMembership(MembershipRecord(user: "bob", container: "photos", role: .viewer))
            try await store.setMembership(MembershipRecord(user: "ann", container: "photos", role: .editor))
            try await store.setMembership(MembershipRecord(user: "ann", container: "code", role: .viewer))
            // Setting again replaces the role.
            try await store.setMembership(MembershipRecord(user: "ann", container: "code", role: .admin))
            #expect(
                try await store.memberships(container: "photos") == [
                    MembershipRecord(user: "ann", container: "photos", role: .editor),
                    MembershipRecord(user: "bob", container: "photos", role: .viewer),
                ])
            #expect(
                try await store.memberships(container: nil) == [
                    MembershipRecord(user: "ann", container: "code", role: .admin),
                    MembershipRecord(user: "ann", container: "photos", role: .editor),
                    MembershipRecord(user: "bob", container: "photos", role: .viewer),
                ])
            #expect(try await store.roles(user: "ann") == ["code": .admin, "photos": .editor])
            #expect(try await store.roles(user: "carl") == [:])

            #expect(try await store.removeMembership(user: "ann", container: "photos"))
            #expect(try await !store.removeMembership(user: "ann", container: "photos"))
            #expect(try await store.roles(user: "ann") == ["code": .admin])
        }
    }

    @Test(arguments: AccessBackend.allCases) func anEnrolmentCodeIsTakenOnceAndNeverAfterItExpires(
        backend: AccessBackend
    ) async throws {
        try await withAccessStore(backend) { store, _ async throws in
            try await store.insertEnrolment(digest: Self.digest("e1"), user: "ann", expires: 1_000)
            try await store.insertEnrolment(digest: Self.digest("e2"), user: "bob", expires: 1_000)
            #expect(try await store.takeEnrolment(digest: Self.digest("e1"), at: 999) == "ann")
            #expect(try await store.takeEnrolment(digest: Self.digest("e1"), at: 999) == nil)
            // At its expiry a code is no longer good, and it is gone: not good even at an earlier time.
            #expect(try await store.takeEnrolment(digest: Self.digest("e2"), at: 1_000) == nil)
            #expect(try await store.takeEnrolment(digest: Self.digest("e2"), at: 10) == nil)
            #expect(try await store.takeEnrolment(digest: Self.digest("e3"), at: 10) == nil)
        }
    }

    @Test(arguments: AccessBackend.allCases) func concurrentTakesOfOneCodeEnrolOnce(backend: AccessBackend) async throws
    {
        try await withAccessStore(backend) { store, _ async throws in
            try await store.insertEnrolment(digest: Self.digest("e1"), user: "ann", expires: 1_000)
            let taken = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<10 { group.addTask { try await store.takeEnrolment(digest: Self.digest("e1"), at: 5) } }
                return try await group.reduce(into: [String]()) { taken, user in user.map { taken.append($0) } }
            }
            #expect(taken == ["ann"])
        }
    }

    /// Two logins racing with one TOTP code: exactly one may record its step.
    @Test(arguments: AccessBackend.allCases) func concurrentAcceptsOfOneTOTPStepPassOnce(backend: AccessBackend)
        async throws
    {
        try await withAccessStore(backend) { store, fixture async throws in
            #expect(try await store.insertUser(UserRecord(name: "ann", passwordHash: nil, created: 1)))
            let accepted = try await withThrowingTaskGroup(of: Bool?.self) { group in
                for index in 0..<10 {
                    let target = index % 2 == 0 ? store : fixture.other
                    group.addTask { try await target.changeUser("ann", .acceptedTOTPStep(7)) }
                }
                return try await group.reduce(0) { count, passed in count + (passed == true ? 1 : 0) }
            }
            #expect(accepted == 1)
        }
    }

    @Test(arguments: AccessBackend.allCases) func failuresAreCountedPerKeyAndCleared(backend: AccessBackend)
        async throws
    {
        try await withAccessStore(backend) { store, _ async throws in
            for time: Int64 in [10, 20, 30] { try await store.noteFailure(key: "user:ann", at: time) }
            try await store.noteFailure(key: "address:192.0.2.7", at: 25)
            #expect(try await store.failures(key: "user:ann", since: 0) == 3)
            #expect(try await store.failures(key: "user:ann", since: 20) == 2)
            #expect(try await store.failures(key: "user:ann", since: 31) == 0)
            #expect(try await store.failures(key: "address:192.0.2.7", since: 0) == 1)
            #expect(try await store.failures(key: "user:bob", since: 0) == 0)

            // A success clears its key only (and nothing else is older than 0).
            try await store.clearFailures(key: "user:ann", before: 0)
            #expect(try await store.failures(key: "user:ann", since: 0) == 0)
            #expect(try await store.failures(key: "address:192.0.2.7", since: 0) == 1)
            // Housekeeping: every key's failures older than `before` go, newer ones stay.
            try await store.noteFailure(key: "user:ann", at: 40)
            try await store.clearFailures(key: nil, before: 30)
            #expect(try await store.failures(key: "address:192.0.2.7", since: 0) == 0)
            #expect(try await store.failures(key: "user:ann", since: 0) == 1)
        }
    }

    private static func link(
        _ id: String, container: String = "photos", maxDownloads: Int64? = nil, created: Int64 = 100
    ) -> LinkRecord {
        LinkRecord(
            id: id, container: container, prefix: "albums/2024", kind: .uploadOnly, passwordHash: "$argon2id$link",
            created: created, expires: created + 86_400, maxDownloads: maxDownloads, createdBy: "user:ann",
            label: "drop box")
    }

    @Test(arguments: AccessBackend.allCases) func linksAreFoundByDigestListedPerContainerAndRevokedOnce(
        backend: AccessBackend
    ) async throws {
        try await withAccessStore(backend) { store, _ async throws in
            let first = Self.link("0000aaa1", maxDownloads: 3)
            let second = Self.link("0000aaa2", container: "code", created: 101)
            let third = LinkRecord(
                id: "0000aaa3", container: "photos", prefix: "", kind: .view, passwordHash: nil, created: 102,
                expires: nil, maxDownloads: nil, createdBy: "admin", label: "")
            #expect(try await store.insertLink(first, digest: Self.digest("a1")))
            #expect(try await store.insertLink(second, digest: Self.digest("a2")))
            #expect(try await store.insertLink(third, digest: Self.digest("a3")))
            #expect(try await !store.insertLink(Self.link("0000aaa1", container: "x"), digest: Self.digest("a9")))
            #expect(try await !store.insertLink(Self.link("0000aaa9", container: "x"), digest: Self.digest("a1")))

            #expect(try await store.link(digest: Self.digest("a1")) == first)
            #expect(try await store.link(digest: Self.digest("a3")) == third)
            #expect(try await store.link(digest: Self.digest("a9")) == nil)
            #expect(try await store.links(container: "photos") == [first, third])
            #expect(try await store.links(container: nil) == [first, second, third])
            #expect(try await store.links(container: "none") == [])

            #expect(try await store.revokeLink(id: "0000aaa2", at: 150) == true)
            #expect(try await store.revokeLink(id: "0000aaa2", at: 151) == false)
            #expect(try await store.revokeLink(id: "0000aaa9", at: 151) == nil)
            #expect(try await store.link(digest: Self.digest("a2"))?.revoked == 150)
        }
    }

    @Test(arguments: AccessBackend.allCases) func downloadsStopAtTheMaximum(backend: AccessBackend) async throws {
        try await withAccessStore(backend) { store, _ async throws in
            #expect(try await store.insertLink(Self.link("0000aaa1", maxDownloads: 2), digest: Self.digest("a1")))
            #expect(try await store.insertLink(Self.link("0000aaa2"), digest: Self.digest("a2")))
            #expect(try await store.countDownload(link: "0000aaa1"))
            #expect(try await store.countDownload(link: "0000aaa1"))
            #expect(try await !store.countDownload(link: "0000aaa1"))
            #expect(try await store.link(digest: Self.digest("a1"))?.downloads == 2)
            // Without a maximum every download counts; an unknown link counts none.
            for _ in 0..<5 { #expect(try await store.countDownload(link: "0000aaa2")) }
            #expect(try await store.link(digest: Self.digest("a2"))?.downloads == 5)
            #expect(try await !store.countDownload(link: "0000aaa9"))
        }
    }

    @Test(arguments: AccessBackend.allCases) func twentyConcurrentDownloadsCountOnlyUpToTheMaximum(
        backend: AccessBackend
    ) async throws {
        try await withAccessStore(backend) { store, _ async throws in
            #expect(try await store.insertLink(Self.link("0000aaa1", maxDownloads: 5), digest: Self.digest("a1")))
            let counted = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 { group.addTask { try await store.countDownload(link: "0000aaa1") } }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(counted == 5)
            #expect(try await store.link(digest: Self.digest("a1"))?.downloads == 5)
        }
    }

    @Test(arguments: AccessBackend.allCases) func theAuditLogIsFilteredByContainerAndTimeAndPrunedByAge(
        backend: AccessBackend
    ) async throws {
        try await withAccessStore(backend) { store, _ async throws in
            func line(_ time: Int64, _ container: String?, _ action: String) -> AuditRecord {
                AuditRecord(
                    time: time, container: container, actor: "user:ann", address: container == nil ? nil : "192.0.2.7",
                    action: action, target: "t-\(action)", result: "ok")
            }
            // Appended out of time order; two lines in one second keep the order they were appended in.
            let lines = [
                line(100, "photos", "commit"), line(100, "photos", "restore"), line(50, nil, "login"),
                line(200, "code", "commit"), line(300, "photos", "link-create"), line(300, nil, "user-add"),
            ]
            for record in lines { try await store.appendAudit(record) }

            #expect(
                try await store.audit(container: nil, since: 0, limit: 100) == [
                    lines[2], lines[0], lines[1], lines[3], lines[4], lines[5],
                ])
            #expect(try await store.audit(container: "photos", since: 0, limit: 100) == [lines[0], lines[1], lines[4]])
            #expect(try await store.audit(container: "photos", since: 101, limit: 100) == [lines[4]])
            #expect(try await store.audit(container: "photos", since: 300, limit: 100) == [lines[4]])
            #expect(try await store.audit(container: nil, since: 200, limit: 2) == [lines[3], lines[4]])
            #expect(try await store.audit(container: "none", since: 0, limit: 100) == [])

            #expect(try await store.pruneAudit(before: 200) == 3)
            #expect(try await store.pruneAudit(before: 200) == 0)
            #expect(try await store.audit(container: nil, since: 0, limit: 100) == [lines[3], lines[4], lines[5]])
        }
    }

    @Test(arguments: AccessBackend.allCases) func aChangeThroughAnotherStoreIsSeenByTheNextCall(
        backend: AccessBackend
    ) async throws {
        try await withAccessStore(backend) { store, fixture async throws in
            #expect(try await store.token(digest: Self.digest("aa")) == nil)
            #expect(try await store.user(named: "ann") == nil)
            #expect(try await fixture.other.insertToken(Self.token("0000000a"), digest: Self.digest("aa")))
            #expect(try await fixture.other.insertUser(UserRecord(name: "ann", passwordHash: nil, created: 1)))
            #expect(try await store.token(digest: Self.digest("aa"))?.revoked == nil)
            #expect(try await store.user(named: "ann")?.disabled == nil)
            #expect(try await fixture.other.revokeToken(id: "0000000a", at: 5) == true)
            #expect(
                try await fixture.other.changeUser("ann", .disabled(6)) == true)
            #expect(try await store.token(digest: Self.digest("aa"))?.revoked == 5)
            #expect(try await store.user(named: "ann")?.disabled == 6)
        }
    }

    /// PostgreSQL only: the embedded store's one SQLite file has no outage to play.
    @Test(arguments: [AccessBackend.postgres]) func anUnreachableStoreThrowsInsteadOfAnsweringNoRow(
        backend: AccessBackend
    ) async throws {
        try await withAccessStore(backend) { store, fixture async throws in
            #expect(try await store.insertToken(Self.token("0000000a"), digest: Self.digest("aa")))
            await fixture.cutOff()
            await #expect(throws: SyncServerError.self) { _ = try await store.token(digest: Self.digest("aa")) }
            await #expect(throws: SyncServerError.self) { _ = try await store.revokeToken(id: "0000000a", at: 1) }
            await #expect(throws: SyncServerError.self) { _ = try await store.user(named: "ann") }
            await #expect(throws: SyncServerError.self) { _ = try await store.countDownload(link: "0000aaa1") }
            await #expect(throws: SyncServerError.self) { _ = try await store.failures(key: "user:ann", since: 0) }
            await #expect(throws: SyncServerError.self) {
                _ = try await store.takeEnrolment(digest: Self.digest("e1"), at: 1)
            }
        }
    }
}
