import Foundation
import Glibc
import TestSupport
import Testing

/// Rule chains on real mounts (the harness of `MergeMountTest`).
extension MergeMountTest {
    /// A save game both mounts changed so the JSON merge conflicts: the chain's next policy
    /// decides by the score inside, and the resolving mount's own version (the higher score) wins
    /// on both mounts, with no conflict copy. A malformed chain is first shown as a rules error.
    /// On a local container and through `serve`.
    @Test(arguments: [false, true]) func aChainPrefersTheHigherScoreWhenTheJSONMergeConflicts(overServer: Bool) throws {
        try SyncedMounts.with(uploadDelay: 600_000, overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path(".syncfs-rules"), "*.sav prefer=newest else merge=json\n")
            let error = "rules error: .syncfs-rules: line 1: nothing after prefer=newest is used (it always decides)"
            #expect(
                waitUntil { try a.expectCommand(["status", a.root]).stdout.contains(error) },
                "status shows the malformed chain\n\(a.daemonLog())")
            try writeFile(a.path(".syncfs-rules"), "*.sav merge=json else prefer=max(json:/score)\n")
            #expect(a.expectSync())
            #expect(waitUntil { pathExists(b.path(".syncfs-rules")) })
            let winner = "{\"score\": 40, \"level\": 3}\n"
            try editOnBothSides(
                mounts, "game.sav", base: "{\"score\": 10, \"level\": 1}\n", onA: "{\"score\": 25, \"level\": 2}\n",
                onB: winner)
            #expect(
                waitUntil { try readText(a.path("game.sav")) == winner && readText(b.path("game.sav")) == winner },
                "the higher score is on both mounts\n\(mounts.logs())")
            #expect(try listDirectory(a.root).sorted() == [".syncfs-rules", "game.sav"], "no conflict copy")
            #expect(try listDirectory(b.root).sorted() == [".syncfs-rules", "game.sav"], "no conflict copy")
            #expect(try conflicts(a).isEmpty && conflicts(b).isEmpty)
            expectConverged(mounts, "after the chain decided")
        }
    }
}
