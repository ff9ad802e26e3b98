import Foundation
import Glibc
import TestSupport
import Testing

/// Advisory locks across mounts (doc/SEMANTICS.md, "Locks"): flock and fcntl locks taken through
/// one mount of a container hold on every mount of it; blocking requests wait and are
/// interruptible; a crashed holder's lease runs out; a lock granted offline that another mount
/// holds when the container answers again is lost and said so; `status PATH` and
/// `user.syncfs.lock` say who holds a lock.
///
/// The lock behaviour shared with a local file system (`flockExcludes`, `rangesExclude`,
/// `blockingWaitsThenIsGranted`, `aSignalInterruptsTheWait`) runs with the same assertions for
/// two processes on one plain directory, for two processes on one mount, and for a process on
/// each of two mounts (of a local container, and through a server).
@Suite(.serialized)
struct LockMountTest {
    // MARK: - The behaviour, wherever the two processes are

    /// flock: exclusive excludes both kinds, LOCK_UN hands it over, and the last close of the
    /// holder's open file ends it (the kernel does not wait for that release: hence the wait).
    static func flockExcludes(_ first: String, _ second: String) throws {
        try LockingProcess.with { p in
            try LockingProcess.with { q in
                #expect(p.run("open \(first)") == "ok")
                #expect(q.run("open \(second)") == "ok")
                #expect(p.run("flock ex nb") == "ok")
                #expect(q.run("flock ex nb") == "busy")
                #expect(q.run("flock sh nb") == "busy")
                #expect(p.run("flock un") == "ok")
                #expect(q.run("flock ex nb") == "ok")
                #expect(p.run("flock sh nb") == "busy")
                #expect(q.run("close") == "ok")
                #expect(waitUntil(timeout: 15) { p.run("flock ex nb") == "ok" }, "the close did not end the flock")
            }
        }
    }

    /// fcntl byte ranges: apart both granted, overlapping refused, F_GETLK names the lock in the
    /// way, and a close of any descriptor of the file ends its process's locks at once.
    static func rangesExclude(_ first: String, _ second: String) throws {
        try LockingProcess.with { p in
            try LockingProcess.with { q in
                #expect(p.run("open \(first)") == "ok")
                #expect(q.run("open \(second)") == "ok")
                #expect(p.run("fcntl wr 0 100 nb") == "ok")
                #expect(q.run("fcntl wr 100 100 nb") == "ok")
                #expect(q.run("fcntl rd 50 100 nb") == "busy")
                #expect(q.run("getlk wr 0 10") == "locked wr 0 100")
                #expect(p.run("getlk rd 150 10") == "locked wr 100 100")
                #expect(p.run("getlk rd 300 10") == "unlocked")
                #expect(p.run("fcntl un 0 100") == "ok")
                #expect(q.run("fcntl rd 50 100 nb") == "ok")
                #expect(q.run("close") == "ok")
                #expect(p.run("fcntl wr 0 0 nb") == "ok", "q's close did not end its locks")
            }
        }
    }

    /// A blocking request (flock without LOCK_NB, F_SETLKW) waits while the other holds the
    /// lock and is granted once it unlocks.
    static func blockingWaitsThenIsGranted(_ first: String, _ second: String, fcntl: Bool) throws {
        let (take, give) = fcntl ? ("fcntl wr 0 0", "fcntl un 0 0") : ("flock ex", "flock un")
        try LockingProcess.with { p in
            try LockingProcess.with { q in
                #expect(p.run("open \(first)") == "ok")
                #expect(q.run("open \(second)") == "ok")
                #expect(p.run("\(take) nb") == "ok")
                q.send(take)
                #expect(q.answer(timeout: 1) == nil, "granted while the other held it")
                #expect(p.run(give) == "ok")
                #expect(q.answer(timeout: 15) == "ok")
                #expect(p.run("\(take) nb") == "busy")
            }
        }
    }

    /// A signal ends a blocking request with EINTR (the handler raises), and it took nothing.
    static func aSignalInterruptsTheWait(_ first: String, _ second: String, fcntl: Bool) throws {
        let (take, give) = fcntl ? ("fcntl wr 0 0", "fcntl un 0 0") : ("flock ex", "flock un")
        try LockingProcess.with { p in
            try LockingProcess.with { q in
                #expect(p.run("open \(first)") == "ok")
                #expect(q.run("open \(second)") == "ok")
                #expect(p.run("\(take) nb") == "ok")
                q.send(take)
                #expect(q.answer(timeout: 1) == nil, "granted while the other held it")
                q.signal(SIGUSR1)
                #expect(q.answer(timeout: 10) == "interrupted")
                #expect(p.run(give) == "ok")
                #expect(p.run("\(take) nb") == "ok", "the interrupted request took the lock")
            }
        }
    }

    static func allBehaviour(_ first: String, _ second: String) throws {
        try flockExcludes(first, second)
        try rangesExclude(first, second)
        for fcntl in [false, true] {
            try blockingWaitsThenIsGranted(first, second, fcntl: fcntl)
            try aSignalInterruptsTheWait(first, second, fcntl: fcntl)
        }
    }

    @Test func twoProcessesOnAPlainDirectory() throws {
        try TestFolder.with(.plain) { folder in
            try writeFile(folder.path("f"), "x")
            try Self.allBehaviour(folder.path("f"), folder.path("f"))
        }
    }

    @Test func twoProcessesOnOneMount() throws {
        try TestFolder.with(.mount) { folder in
            try writeFile(folder.path("f"), "x")
            try Self.allBehaviour(folder.path("f"), folder.path("f"))
        }
    }

    @Test func aProcessOnEachOfTwoMounts() throws {
        try Self.withTwoMounts { mounts, onA, onB in try Self.allBehaviour(onA, onB) }
    }

    @Test func aProcessOnEachOfTwoMountsThroughAServer() throws {
        try Self.withTwoMounts(overServer: true) { mounts, onA, onB in
            try Self.allBehaviour(onA, onB)
            try LockingProcess.with { p in
                #expect(p.run("open \(onA)") == "ok")
                #expect(p.run("fcntl wr 10 20 nb") == "ok")
                let line = try syncfsXattr(onB, "lock")
                #expect(line.hasPrefix("posix exclusive 10-29 by 'alpha' until "), "\(line)")
            }
        }
    }

    /// An encrypted container through a server: its locks hold across mounts as a plain one's.
    @Test func aProcessOnEachOfTwoMountsOfAnEncryptedContainer() throws {
        let keys = try TemporaryDirectory()
        let key = ["--device-key", keys.path + "/device-key"]
        try Self.withTwoMounts(
            argumentsA: ["--create-encrypted"] + key, argumentsB: ["--encrypted"] + key, overServer: true
        ) { mounts, onA, onB in
            try Self.allBehaviour(onA, onB)
        }
    }

    /// `--local-locks`: the kernel keeps the locks, so processes of one mount still exclude each
    /// other while a process on the other mount is not excluded (each mount locks on its own).
    @Test func localLocksHoldOnTheirMountOnly() throws {
        try Self.withTwoMounts(argumentsA: ["--local-locks"], argumentsB: ["--local-locks"]) { mounts, onA, onB in
            try LockingProcess.with { p in
                try LockingProcess.with { q in
                    try LockingProcess.with { r in
                        #expect(p.run("open \(onA)") == "ok")
                        #expect(q.run("open \(onA)") == "ok")
                        #expect(r.run("open \(onB)") == "ok")
                        #expect(p.run("flock ex nb") == "ok")
                        #expect(q.run("flock ex nb") == "busy", "processes of one mount exclude each other")
                        #expect(r.run("flock ex nb") == "ok", "the other mount does not see a local lock")
                        #expect(p.run("fcntl wr 0 100 nb") == "ok")
                        #expect(q.run("fcntl wr 50 10 nb") == "busy")
                        #expect(r.run("fcntl wr 50 10 nb") == "ok")
                    }
                }
            }
            let status = try mounts.b.expectCommand(["status", onB, "--json"]).stdout
            let decoded = try JSONDecoder().decode(LockedPathStatus.self, from: Data(status.utf8))
            #expect((decoded.locks ?? []).isEmpty, "the daemon holds no lock of a local-locks mount: \(status)")
        }
    }

    // MARK: - Only across mounts

    /// `status PATH` and `user.syncfs.lock` on B name A's device as the holder, with the lease's
    /// end; on A the lock is this mount's.
    @Test func statusAndTheAttributeSayWhoHoldsALock() throws {
        try Self.withTwoMounts { mounts, onA, onB in
            try LockingProcess.with { p in
                #expect(p.run("open \(onA)") == "ok")
                #expect(p.run("flock ex nb") == "ok")
                let seen: LockedPathStatus = try mounts.b.statusJSON(of: onB)
                let lock = try #require(seen.locks?.first)
                #expect(seen.locks?.count == 1)
                #expect(lock.holder == "alpha" && lock.kind == "flock" && lock.mode == "exclusive")
                #expect(lock.start == 0 && lock.end == nil && lock.expires != nil)
                #expect(!lock.localOnly && !lock.thisMount)
                let own: LockedPathStatus = try mounts.a.statusJSON(of: onA)
                #expect(own.locks?.first?.thisMount == true)
                let line = try syncfsXattr(onB, "lock")
                #expect(line.hasPrefix("flock exclusive 0-EOF by 'alpha' until "), "\(line)")
                #expect(p.run("flock un") == "ok")
                #expect(throws: PosixError.self) { try syncfsXattr(onB, "lock") }
            }
        }
    }

    /// A daemon killed with the lock held: the lock stays held elsewhere until its lease runs
    /// out (5 s here), then another mount gets it.
    @Test func aCrashedHoldersLeaseRunsOut() throws {
        try Self.withTwoMounts(environmentA: ["SYNCFS_TEST_LOCK_LEASE": "5"]) { mounts, onA, onB in
            try LockingProcess.with { p in
                try LockingProcess.with { q in
                    #expect(p.run("open \(onA)") == "ok")
                    #expect(q.run("open \(onB)") == "ok")
                    #expect(p.run("flock ex nb") == "ok")
                    #expect(q.run("flock ex nb") == "busy")
                    try mounts.a.kill9()
                    #expect(q.run("flock ex nb") == "busy", "the lock went with the daemon, before its lease ran out")
                    #expect(
                        waitUntil(timeout: 30) { q.run("flock ex nb") == "ok" },
                        "the lease never ran out\n\(mounts.logs())")
                }
            }
        }
    }

    /// B cut off from the container grants a lock on B only (`status` says `local only`); A,
    /// which cannot see it, takes the same lock; when B reaches the container again its lock is
    /// lost — a `lock-lost` event, `status` — and B's processes do not share A's lock.
    @Test func aLockGrantedOfflineAndTakenElsewhereIsLost() throws {
        let outage = "/tmp/syncfs-lock-outage-\(getpid())"
        defer { unlink(outage) }
        try Self.withTwoMounts(environmentB: OutageSwitch.environment(outage)) { mounts, onA, onB in
            let events = try Watcher.events([mounts.b.root, "--timeout", "120"])
            defer { _ = events.stop() }
            try LockingProcess.with { p in
                try LockingProcess.with { q in
                    #expect(q.run("open \(onB)") == "ok")
                    #expect(p.run("open \(onA)") == "ok")
                    try writeFile(outage, "")
                    #expect(
                        waitUntil(timeout: 30) { (try? mounts.b.syncStatus())?.online == false },
                        "B did not go offline\n\(mounts.logs())")
                    #expect(q.run("flock ex nb") == "ok")
                    let offline: LockedPathStatus = try mounts.b.statusJSON(of: onB)
                    #expect(offline.locks?.map(\.localOnly) == [true])
                    let counted: LockCountsStatus = try mounts.b.statusJSON(of: mounts.b.root)
                    #expect(counted.locks == .init(held: 1, localOnly: 1, lost: 0))
                    #expect(p.run("flock ex nb") == "ok", "A saw a lock granted offline")
                    unlink(outage)
                    #expect(
                        waitUntil(timeout: 30) { events.lines.contains { $0.contains("\"lock-lost\"") } },
                        "no lock-lost event\n\(events.output)\n\(mounts.logs())")
                    let after: LockedPathStatus = try mounts.b.statusJSON(of: onB)
                    #expect(after.lostLocks?.count == 1)
                    #expect(after.locks?.map(\.holder) == ["alpha"])
                    let recounted: LockCountsStatus = try mounts.b.statusJSON(of: mounts.b.root)
                    #expect(recounted.locks == .init(held: 0, localOnly: 0, lost: 1))
                    try LockingProcess.with { r in
                        #expect(r.run("open \(onB)") == "ok")
                        #expect(r.run("flock ex nb") == "busy", "B shares A's lock")
                    }
                }
            }
        }
    }

    // MARK: - Setup

    /// Two mounts of one local container (or, `overServer`, of one container a `serve` process
    /// serves), devices `alpha` (A) and `beta` (B), with a file made on A and seen on B: `body`
    /// gets its path on each.
    static func withTwoMounts(
        argumentsA: [String] = [], argumentsB: [String] = [], environmentA: [String: String] = [:],
        environmentB: [String: String] = [:], overServer: Bool = false,
        _ body: (SyncedMounts, String, String) throws -> Void
    ) throws {
        try SyncedMounts.with(
            argumentsA: ["--device-name", "alpha"] + argumentsA, argumentsB: ["--device-name", "beta"] + argumentsB,
            environmentA: environmentA,
            environmentB: environmentB, overServer: overServer
        ) { mounts in
            try writeFile(mounts.a.path("shared"), "x")
            #expect(waitUntil(timeout: 30) { (try? readText(mounts.b.path("shared"))) == "x" })
            try body(mounts, mounts.a.path("shared"), mounts.b.path("shared"))
        }
    }
}

/// `status PATH --json`'s lock fields (doc/CLI.md, "status").
struct LockedPathStatus: Decodable {
    struct Lock: Decodable {
        var holder: String
        var kind: String
        var mode: String
        var start: UInt64
        var end: UInt64?
        var expires: String?
        var localOnly: Bool
        var thisMount: Bool
    }

    var locks: [Lock]?
    var lostLocks: [String]?
}

/// `status MOUNTPOINT --json`'s `locks` (doc/CLI.md, "status").
struct LockCountsStatus: Decodable {
    struct Counts: Decodable, Equatable {
        var held: Int
        var localOnly: Int
        var lost: Int
    }

    var locks: Counts?
}
