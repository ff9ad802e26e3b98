import Foundation
import Glibc
import TestSupport
import Testing

/// What the engine does on the client keeps working on an encrypted container, through the built
/// binary: concurrent edits merge or become a conflict copy, and the mass-delete guard holds a
/// mass deletion until it is released.
@Suite(.serialized)
struct EncryptedEverydayMountTest {
    static func encrypted(_ keys: TemporaryDirectory) -> (a: [String], b: [String]) {
        let key = ["--device-key", keys.path + "/device-key"]
        return (["--create-encrypted"] + key, ["--encrypted"] + key)
    }

    @Test func concurrentEditsMergeOrBecomeAConflictCopy() throws {
        let keys = try TemporaryDirectory()
        let (argumentsA, argumentsB) = Self.encrypted(keys)
        try SyncedMounts.with(uploadDelay: 600_000, argumentsA: argumentsA, argumentsB: argumentsB) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let merge = MergeMountTest()
            let base = (1...40).map { "line \($0)\n" }.joined()
            let onA = base.replacingOccurrences(of: "line 3\n", with: "line 3, edited on A\n")
            let onB = base.replacingOccurrences(of: "line 37\n", with: "line 37, edited on B\n")
            try merge.editOnBothSides(mounts, "todo.txt", base: base, onA: onA, onB: onB)
            let merged = onA.replacingOccurrences(of: "line 37\n", with: "line 37, edited on B\n")
            #expect(
                waitUntil { try readText(a.path("todo.txt")) == merged && readText(b.path("todo.txt")) == merged },
                "both mounts show both edits\n\(mounts.logs())")

            try merge.editOnBothSides(mounts, "plan.txt", base: "draft\n", onA: "A's plan\n", onB: "B's plan\n")
            #expect(
                waitUntil { try merge.conflicts(a).count == 1 && merge.conflicts(b).count == 1 },
                "both mounts list the conflict\n\(mounts.logs())")
            let copy = try #require(try merge.conflicts(a).first?.path)
            #expect(try readText(a.path("plan.txt")) == "A's plan\n")
            #expect(waitUntil { try readText(a.path(copy)) == "B's plan\n" }, "\(mounts.logs())")
            let status = ModelProcess.run([try TestFolder.binaryPath(), "status", a.root], timeout: 60)
            #expect(!status.stdout.contains("ALARM"), "\(status)")
        }
    }

    @Test func aMassDeletionIsHeldUntilReleased() throws {
        let keys = try TemporaryDirectory()
        let (argumentsA, argumentsB) = Self.encrypted(keys)
        try SyncedMounts.with(argumentsA: argumentsA + MassDeleteGuardTest.guarded, argumentsB: argumentsB) {
            mounts in
            let (a, b) = (mounts.a, mounts.b)
            try makeDirectory(a.path("big"))
            for index in 0..<25 { try writeFile(a.path("big/\(index).txt"), "file \(index)") }
            #expect(a.expectSync(), "\(mounts.logs())")
            #expect(waitUntil(timeout: 30) { try listDirectory(b.path("big")).count == 25 }, "\(mounts.logs())")

            let removed = ModelProcess.run(["rm", "-rf", a.path("big")], timeout: 60)
            #expect(removed.ok, "\(removed)")
            let held = waitUntil(timeout: 30) {
                let status: MassDeleteGuardTest.GuardedStatus = try a.statusJSON(of: a.root)
                return status.massDeleteGuard?.held == true
            }
            #expect(held, "the guard holds the deletion\n\(mounts.logs())")
            // Held: nothing of it was sent, so B keeps every file.
            #expect(try listDirectory(b.path("big")).count == 25)

            let release = ModelProcess.run([try TestFolder.binaryPath(), "release", a.root], timeout: 60)
            #expect(release.ok, "\(release)")
            #expect(
                waitUntil(timeout: 30) { access(b.path("big"), F_OK) != 0 },
                "after release B loses the folder\n\(mounts.logs())")
        }
    }
}
