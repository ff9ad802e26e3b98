import SyncMerge
import Testing

@testable import SyncFS

@Suite("IgnoreDecision: what the uploader does with a change under ignore rules")
struct IgnoreDecisionTests {
    let rules = IgnoreRules(defaults: true, synced: [:], local: IgnoreFile(parsing: "*.log\nbuild/\n"))

    func decide(_ local: String?, _ container: String?, directory: Bool = false, waiting: String? = nil)
        -> IgnoreVerdict
    {
        IgnoreDecision.decide(
            local: local, container: container, isDirectory: directory, rules: rules, waitingFolder: waiting)
    }

    @Test func aSyncedPathUploadsWhateverTheContainerHad() {
        #expect(decide("notes.txt", nil) == .upload)
        #expect(decide("notes.txt", "notes.txt") == .upload)
        #expect(decide("notes.txt", "run.log") == .upload, "renamed from an ignored name: created in the container")
    }

    @Test func anIgnoredPathNeverUploadedIsLocalOnly() {
        guard case .localOnly(let match) = decide(".notes.txt.swp", nil) else {
            Issue.record("a swap file must stay local")
            return
        }
        #expect(match.source == .defaults && match.pattern == ".*.swp")
        guard case .localOnly = decide("build/out.o", nil) else {
            Issue.record("below an ignored folder")
            return
        }
    }

    @Test func anEntryIgnoredHereAndInTheContainerIsHeld() {
        guard case .held(let match) = decide("run.log", "run.log") else {
            Issue.record("an edit of a synced file that became ignored is held")
            return
        }
        #expect(match.source == .local && match.line == 1)
        guard case .held = decide(nil, "run.log") else {
            Issue.record("its delete is held too: ignoring never deletes in the container")
            return
        }
    }

    @Test func renamedFromASyncedPathToAnIgnoredOneLeavesTheSyncedSet() {
        #expect(decide("notes.txt~", "notes.txt") == .leftSyncedSet)
    }

    @Test func aFolderRenamedToAnIgnoredNameIsHeldNotDeleted() {
        guard case .held = decide("build", "src", directory: true) else {
            Issue.record("the container keeps the folder and what is in it")
            return
        }
    }

    @Test func aDeleteOfASyncedEntryGoes() {
        #expect(decide(nil, "notes.txt") == .upload)
        #expect(decide(nil, nil) == .upload)
    }

    @Test func aNewEntryBelowAnUnreadableIgnoreFileWaits() {
        #expect(decide("vendor/lib.c", nil, waiting: "vendor") == .waiting(folder: "vendor"))
        #expect(decide("vendor/lib.c", "vendor/lib.c", waiting: "vendor") == .upload, "committed: not a guess")
        #expect(IgnoreVerdict.waiting(folder: "vendor").isHeld)
    }

    @Test func noRulesIgnoreNothing() {
        let verdict = IgnoreDecision.decide(
            local: ".notes.txt.swp", container: nil, isDirectory: false, rules: .none)
        #expect(verdict == .upload)
    }
}
