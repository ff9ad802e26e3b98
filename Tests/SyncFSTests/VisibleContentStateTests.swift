import Testing

@testable import SyncFS

/// `VisibleContentState`: `user.syncfs.state` from the content state, the transfer board, the
/// outbox error and the conflict index — case by case against the values doc/SEMANTICS.md
/// documents, and over every combination of the node's flags against the cascade it replaced.
struct VisibleContentStateTests {
    /// The flags `ContentResidency.contentState(of:in:)` reads.
    struct Flags: CustomTestStringConvertible, Sendable, Hashable {
        /// nil: no running download; else whether it has every chunk.
        var downloadComplete: Bool?
        var transfer: TransferBoard.Direction?
        var hasLocalChanges = false
        var outboxError = false
        var isPlaceholder = false
        var downloadFailed = false
        var inConflict = false
        var testDescription: String {
            var parts: [String] = []
            if let downloadComplete { parts.append(downloadComplete ? "download complete" : "downloading") }
            if let transfer { parts.append("board: \(transfer.rawValue)") }
            if hasLocalChanges { parts.append("local changes") }
            if outboxError { parts.append("outbox error") }
            parts.append(isPlaceholder ? "placeholder" : "local")
            if downloadFailed { parts.append("download failed") }
            if inConflict { parts.append("in conflict") }
            return parts.joined(separator: ", ")
        }

        /// The cascade as it was before it called `VisibleContentState` (commit 018f96e).
        var cascade: ContentState {
            if let downloadComplete { return downloadComplete ? .local : .downloading }
            if let transfer { return transfer == .download ? .downloading : .uploading }
            if hasLocalChanges { return outboxError ? .error : .modified }
            if isPlaceholder && downloadFailed { return .error }
            if inConflict { return .conflict }
            return isPlaceholder ? .online : .local
        }

        var visible: ContentState {
            VisibleContentState(
                runningDownloadComplete: downloadComplete, isPlaceholder: isPlaceholder,
                hasLocalChanges: hasLocalChanges, transfer: transfer
            ).value(outboxError: outboxError, downloadFailed: downloadFailed, inConflict: inConflict)
        }

        /// Every combination a node can show (a running download only for a placeholder).
        static let all: [Flags] = {
            var result: [Flags] = []
            for download in [nil, false, true] as [Bool?] {
                for transfer in [nil, .download, .upload] as [TransferBoard.Direction?] {
                    for bits in 0..<32 {
                        let flags = Flags(
                            downloadComplete: download, transfer: transfer, hasLocalChanges: bits & 1 != 0,
                            outboxError: bits & 2 != 0, isPlaceholder: download != nil || bits & 4 != 0,
                            downloadFailed: bits & 8 != 0, inConflict: bits & 16 != 0)
                        result.append(flags)
                    }
                }
            }
            return Array(Set(result))
        }()
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var flags: Flags
        var expected: ContentState
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a placeholder: online", flags: Flags(isPlaceholder: true), expected: .online),
        Case(name: "downloaded, in sync: local", flags: Flags(), expected: .local),
        Case(
            name: "a download running: downloading", flags: Flags(downloadComplete: false, isPlaceholder: true),
            expected: .downloading),
        Case(
            name: "every chunk there, the final sync left: local already",
            flags: Flags(downloadComplete: true, isPlaceholder: true), expected: .local),
        Case(
            name: "a running download wins over queued metadata changes",
            flags: Flags(downloadComplete: false, hasLocalChanges: true, isPlaceholder: true), expected: .downloading),
        Case(
            name: "new content of a local file coming down: downloading",
            flags: Flags(transfer: .download), expected: .downloading),
        Case(
            name: "an upload on the board: uploading", flags: Flags(transfer: .upload, hasLocalChanges: true),
            expected: .uploading),
        Case(
            name: "the upload wins over its earlier failure",
            flags: Flags(transfer: .upload, hasLocalChanges: true, outboxError: true), expected: .uploading),
        Case(name: "queued: modified", flags: Flags(hasLocalChanges: true), expected: .modified),
        Case(
            name: "queued, last attempt failed: error", flags: Flags(hasLocalChanges: true, outboxError: true),
            expected: .error),
        Case(
            name: "a placeholder whose download failed: error",
            flags: Flags(isPlaceholder: true, downloadFailed: true), expected: .error),
        Case(
            name: "a local file's failed download does not matter any more",
            flags: Flags(downloadFailed: true), expected: .local),
        Case(name: "in sync, in conflict: conflict", flags: Flags(inConflict: true), expected: .conflict),
        Case(
            name: "a placeholder in conflict: conflict", flags: Flags(isPlaceholder: true, inConflict: true),
            expected: .conflict),
        Case(
            name: "modified wins over conflict", flags: Flags(hasLocalChanges: true, inConflict: true),
            expected: .modified),
    ]

    @Test(arguments: cases)
    func showsTheDocumentedValue(_ testCase: Case) {
        #expect(testCase.flags.visible == testCase.expected, "\(testCase.name)")
        #expect(testCase.flags.cascade == testCase.expected, "\(testCase.name)")
    }

    @Test func agreesWithTheCascadeOnEveryCombinationOfFlags() {
        #expect(Flags.all.count == 3 * (32 + 16 + 16))
        for flags in Flags.all {
            #expect(flags.visible == flags.cascade, "\(flags.testDescription)")
        }
    }

    /// The new states the cascade did not know: always `error`, whatever else is going on, so a
    /// file that will never upload never reads `modified` or `uploading`.
    @Test(arguments: [ContentLifecycle.State(.lost, .dirty), ContentLifecycle.State(.local, .writeFailed)])
    func lostAndWriteFailedReadError(_ state: ContentLifecycle.State) {
        for transfer in [nil, .download, .upload] as [TransferBoard.Direction?] {
            for outboxError in [false, true] {
                let visible = VisibleContentState(content: state, transfer: transfer)
                #expect(visible.value(outboxError: outboxError, downloadFailed: false, inConflict: true) == .error)
            }
        }
    }

    /// Inputs the answer does not depend on are not asked for (the conflict index walks the tree).
    @Test func asksForTheConflictIndexOnlyWhenItMatters() {
        var asked = 0
        func inConflict() -> Bool {
            asked += 1
            return true
        }
        let modified = VisibleContentState(content: ContentLifecycle.State(.local, .dirty))
        #expect(modified.value(outboxError: false, downloadFailed: false, inConflict: inConflict()) == .modified)
        #expect(asked == 0)
        let clean = VisibleContentState(content: ContentLifecycle.State(.local, .clean))
        #expect(clean.value(outboxError: false, downloadFailed: false, inConflict: inConflict()) == .conflict)
        #expect(asked == 1)
    }
}
