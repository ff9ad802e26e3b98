import SyncBackend
import Testing

@testable import SyncFS

/// `ConflictDecision`, case by case: the table of doc/SEMANTICS.md "Conflicts and merges".
struct ConflictDecisionTests {
    static let folder = FileID(high: 1, low: 1)
    static let other = FileID(high: 2, low: 2)
    static let id = FileID(high: 9, low: 9)
    static let chunkA = ChunkRef(hash: ChunkHash(bytes: Array(repeating: 0xA, count: 32))!, length: 4)
    static let chunkB = ChunkRef(hash: ChunkHash(bytes: Array(repeating: 0xB, count: 32))!, length: 5)
    static let chunkC = ChunkRef(hash: ChunkHash(bytes: Array(repeating: 0xC, count: 32))!, length: 6)

    /// The base: `report.txt` in `folder`, mode 644, content A, one xattr.
    static let base = EntryState(
        parent: folder, name: Array("report.txt".utf8), kind: .file, mode: 0o644, mtime: 1_000, size: 4,
        xattrs: ["user.tag": [1]], manifest: [chunkA])

    static func edited(_ change: (inout EntryState) -> Void) -> EntryState {
        var state = base
        change(&state)
        return state
    }
    static func content(_ ref: ChunkRef, mtime: Int64) -> (inout EntryState) -> Void {
        { state in
            state.manifest = [ref]
            state.size = ref.length
            state.mtime = mtime
        }
    }
    static func renamed(_ name: String) -> (inout EntryState) -> Void { { $0.name = Array(name.utf8) } }
    static func moved(to parent: FileID) -> (inout EntryState) -> Void { { $0.parent = parent } }

    static func remote(_ state: EntryState, deleted: Bool = false, device: String = "device-b") -> RemoteEntry {
        RemoteEntry(id: id, version: 7, isDeleted: deleted, device: device, state: state)
    }

    static func situation(
        _ local: ConflictDecision.Local, _ refusal: ConflictDecision.Refusal, base: EntryState? = base,
        othersTried: Bool = false, othersQueued: Bool = false
    ) -> ConflictDecision.Situation {
        ConflictDecision.Situation(
            local: local, refusal: refusal, base: base, localDevice: "device-a", othersTried: othersTried,
            othersQueued: othersQueued)
    }

    /// `situation` met in an upload nested as deep as uploads may go.
    static func nestedTooDeep(_ situation: ConflictDecision.Situation) -> ConflictDecision.Situation {
        var deep = situation
        deep.mayNestUploads = false
        return deep
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var situation: ConflictDecision.Situation
        var expected: ConflictDecision.Action
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        // Edit against delete, delete against edit, delete against delete.
        Case(
            name: "edit vs delete: the edit survives (re-created on the tombstone)",
            situation: situation(
                .put(edited(content(chunkB, mtime: 2_000))), .changed(current: remote(base, deleted: true))),
            expected: .commitOnTop),
        Case(
            name: "delete vs edit: the edit survives",
            situation: situation(.delete, .changed(current: remote(edited(content(chunkB, mtime: 2_000))))),
            expected: .takeRemote),
        Case(
            name: "delete vs delete: done",
            situation: situation(.delete, .changed(current: remote(base, deleted: true))), expected: .finished),
        Case(
            name: "delete of an entry the container never had: nothing to do",
            situation: situation(.delete, .changed(current: nil)), expected: .finished),
        Case(
            name: "put of an entry the container forgot: created afresh",
            situation: situation(.put(base), .changed(current: nil)), expected: .commitOnTop),
        // Our own earlier commit (its answer lost).
        Case(
            name: "our own commit came back: finished",
            situation: situation(.put(base), .changed(current: remote(base, device: "device-a"))),
            expected: .finished),
        Case(
            name: "our own earlier commit, changed again since: on top of it",
            situation: situation(
                .put(edited(renamed("b.txt"))), .changed(current: remote(base, device: "device-a"))),
            expected: .commitOnTop),
        // Rename against edit: both apply.
        Case(
            name: "rename vs content edit: our name, their content",
            situation: situation(
                .put(edited(renamed("final.txt"))), .changed(current: remote(edited(content(chunkB, mtime: 2_000))))),
            expected: .adopt(
                edited {
                    renamed("final.txt")(&$0)
                    content(chunkB, mtime: 2_000)(&$0)
                })),
        Case(
            name: "content edit vs rename: their name, our content",
            situation: situation(
                .put(edited(content(chunkB, mtime: 2_000))), .changed(current: remote(edited(renamed("final.txt"))))),
            expected: .adopt(
                edited {
                    renamed("final.txt")(&$0)
                    content(chunkB, mtime: 2_000)(&$0)
                })),
        Case(
            name: "move vs chmod: both apply",
            situation: situation(
                .put(edited(moved(to: other))), .changed(current: remote(edited { $0.mode = 0o600 }))),
            expected: .adopt(
                edited {
                    moved(to: other)(&$0)
                    $0.mode = 0o600
                })),
        // Rename against rename: a fixed winner (the device whose ID sorts first: device-a here).
        Case(
            name: "rename vs rename: the device sorting first wins (ours)",
            situation: situation(
                .put(edited(renamed("mine.txt"))), .changed(current: remote(edited(renamed("theirs.txt"))))),
            expected: .adopt(edited(renamed("mine.txt")))),
        Case(
            name: "rename vs rename: the device sorting first wins (theirs)",
            situation: situation(
                .put(edited(renamed("mine.txt"))),
                .changed(current: remote(edited(renamed("theirs.txt")), device: "device-0"))),
            expected: .takeRemote),
        Case(
            name: "the same rename on both sides: nothing to add",
            situation: situation(
                .put(edited(renamed("same.txt"))), .changed(current: remote(edited(renamed("same.txt"))))),
            expected: .takeRemote),
        // Content against content.
        Case(
            name: "content vs content: the merge policy decides (metadata merged, newest mtime)",
            situation: situation(
                .put(edited(content(chunkB, mtime: 3_000))),
                .changed(current: remote(edited(content(chunkC, mtime: 2_000))))),
            expected: .mergeContent(edited(content(chunkC, mtime: 3_000)))),
        Case(
            name: "content vs content with an unknown base: the merge policy decides",
            situation: situation(
                .put(edited(content(chunkB, mtime: 3_000))),
                .changed(current: remote(edited(content(chunkC, mtime: 2_000)))),
                base: nil),
            expected: .mergeContent(edited(content(chunkC, mtime: 3_000)))),
        Case(
            name: "the same content on both sides: no merge",
            situation: situation(
                .put(edited(content(chunkB, mtime: 2_000))),
                .changed(current: remote(edited(content(chunkB, mtime: 2_000))))),
            expected: .takeRemote),
        // Metadata against metadata.
        Case(
            name: "xattrs merge key by key",
            situation: situation(
                .put(edited { $0.xattrs["user.mine"] = [2] }),
                .changed(current: remote(edited { $0.xattrs["user.tag"] = nil }))),
            expected: .adopt(edited { $0.xattrs = ["user.mine": [2]] })),
        Case(
            name: "mtime changed on both: the later one",
            situation: situation(
                .put(edited { $0.mtime = 5_000 }), .changed(current: remote(edited { $0.mtime = 4_000 }))),
            expected: .adopt(edited { $0.mtime = 5_000 })),
        // Names, parents, cycles, non-empty directories.
        Case(
            name: "two new entries with the same name: both kept (ours renamed aside)",
            situation: situation(.put(base), .nameTaken(freedByQueuedChange: false)), expected: .renameAside),
        Case(
            name: "a name our own queued change frees (swap or rotation): that change first",
            situation: situation(.put(base), .nameTaken(freedByQueuedChange: true)), expected: .letNameHolderGoFirst),
        Case(
            name: "…met deep in nested uploads (a long chain of new folders): back to the queue, never a conflict copy",
            situation: nestedTooDeep(situation(.put(base), .nameTaken(freedByQueuedChange: true))),
            expected: .retryOnItsOwn),
        Case(
            name: "…but a name nobody here frees is kept both ways at any depth",
            situation: nestedTooDeep(situation(.put(base), .nameTaken(freedByQueuedChange: false))),
            expected: .renameAside),
        Case(
            name: "a file added in a directory deleted remotely: the directory comes back",
            situation: situation(.put(base), .parentMissing(parentDeletedRemotely: true)), expected: .recreateParent),
        Case(
            name: "a parent not committed yet: wait for it",
            situation: situation(.put(base), .parentMissing(parentDeletedRemotely: false)), expected: .waitForParent),
        Case(
            name: "a directory deleted here got new entries remotely: first our other changes",
            situation: situation(.delete, .directoryNotEmpty), expected: .uploadOthersFirst),
        Case(
            name: "…met deep in nested uploads: back to the queue, no waiting round spent",
            situation: nestedTooDeep(situation(.delete, .directoryNotEmpty, othersQueued: true)),
            expected: .retryOnItsOwn),
        Case(
            name: "…but once the others were tried, the depth changes nothing: wait for them",
            situation: nestedTooDeep(situation(.delete, .directoryNotEmpty, othersTried: true, othersQueued: true)),
            expected: .waitForOthers),
        Case(
            name: "a directory deleted here still holds what we deleted too (queued behind it): those deletes first",
            situation: {
                var behind = situation(.delete, .directoryNotEmpty)
                behind.ownDeletesBelowQueued = true
                return behind
            }(),
            expected: .uploadOwnDeletesFirst),
        Case(
            name: "…then, with nothing of ours queued, the directory comes back with them",
            situation: situation(.delete, .directoryNotEmpty, othersTried: true), expected: .takeRemote),
        Case(
            name: "…while other changes of ours are still queued: wait for them",
            situation: situation(.delete, .directoryNotEmpty, othersTried: true, othersQueued: true),
            expected: .waitForOthers),
        Case(
            name: "…but not forever (they may wait for this one): then the container's version",
            situation: {
                var waited = situation(.delete, .directoryNotEmpty, othersTried: true, othersQueued: true)
                waited.roundsWaited = ConflictDecision.maxRoundsWaited
                return waited
            }(),
            expected: .takeRemote),
        Case(
            name: "concurrent moves that would make a cycle: first our other changes",
            situation: situation(.put(edited(moved(to: other))), .wouldCreateCycle), expected: .uploadOthersFirst),
        Case(
            name: "…then the container's placement stays (no cycle, nothing lost)",
            situation: situation(.put(edited(moved(to: other))), .wouldCreateCycle, othersTried: true),
            expected: .takeRemote),
    ]

    @Test(arguments: cases)
    func decides(_ testCase: Case) {
        #expect(ConflictDecision.decide(testCase.situation) == testCase.expected, "\(testCase.name)")
    }

    @Test func theOutcomeDoesNotDependOnWhichSideWasRefused() {
        // Rename vs rename from both points of view: the same name wins.
        let mine = Self.edited(Self.renamed("mine.txt"))
        let theirs = Self.edited(Self.renamed("theirs.txt"))
        let fromA = ConflictDecision.mergeFields(base: Self.base, ours: mine, theirs: theirs, oursWinsTies: true)
        let fromB = ConflictDecision.mergeFields(base: Self.base, ours: theirs, theirs: mine, oursWinsTies: false)
        #expect(fromA.state == fromB.state)
        #expect(fromA.state.name == Array("mine.txt".utf8))
        // Content vs content: both report the conflict; the later mtime is kept either way.
        let contentA = Self.edited(Self.content(Self.chunkB, mtime: 3_000))
        let contentB = Self.edited(Self.content(Self.chunkC, mtime: 2_000))
        let a = ConflictDecision.mergeFields(base: Self.base, ours: contentA, theirs: contentB, oursWinsTies: true)
        let b = ConflictDecision.mergeFields(base: Self.base, ours: contentB, theirs: contentA, oursWinsTies: false)
        #expect(a.contentConflict && b.contentConflict)
        #expect(a.state.mtime == 3_000 && b.state.mtime == 3_000)
    }
}
