import Testing

@testable import SyncFS

/// `ContentLifecycle`, pair by pair: every reachable (state, event) pair → (state, actions), the
/// impossible ones included (unchanged, no action, a diagnostic). The table of doc/SEMANTICS.md
/// "The content state machine" names the states.
struct ContentLifecycleTests {
    typealias State = ContentLifecycle.State
    typealias Event = ContentLifecycle.Event
    typealias Action = ContentLifecycle.Action

    /// The expected outcome of one pair.
    enum Outcome: CustomStringConvertible, Sendable {
        case to(State, [Action])
        /// Cannot happen: unchanged, no action, a diagnostic.
        case impossible

        var description: String {
            switch self {
            case .to(let state, let actions): return "\(state) \(actions)"
            case .impossible: return "impossible"
            }
        }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var state: State
        var event: Event
        var expected: Outcome
        var testDescription: String { "\(event) in \(state) → \(expected)" }
    }

    static let placeholderClean = State(.placeholder, .clean)
    static let placeholderDirty = State(.placeholder, .dirty)
    static let placeholderUploading = State(.placeholder, .uploading)
    static let hydratingClean = State(.hydrating, .clean)
    static let hydratingDirty = State(.hydrating, .dirty)
    static let hydratingUploading = State(.hydrating, .uploading)
    static let localClean = State(.local, .clean)
    static let localDirty = State(.local, .dirty)
    static let localUploading = State(.local, .uploading)
    static let localWriteFailed = State(.local, .writeFailed)
    static let lost = State(.lost, .dirty)

    /// The permits the machine makes (only through a transition, as the uploader gets them).
    static let cacheFilePermit = ContentLifecycle.State(.local, .dirty).uploadPermit!
    static let manifestPermit = ContentLifecycle.State(.placeholder, .dirty).uploadPermit!

    /// One row per event: the outcome in each reachable state, in `State.reachable` order
    /// (placeholder clean/dirty/uploading, hydrating clean/dirty/uploading, local
    /// clean/dirty/uploading/writeFailed, lost).
    static let table: [Event: [Outcome]] = [
        .openedForWriting: [
            .to(hydratingClean, [.hydrate]), .to(hydratingDirty, [.hydrate]), .to(hydratingUploading, [.hydrate]),
            .to(hydratingClean, [.hydrate]), .to(hydratingDirty, [.hydrate]), .to(hydratingUploading, [.hydrate]),
            .to(localClean, []), .to(localDirty, []), .to(localUploading, []), .to(localWriteFailed, []),
            .to(lost, [.failWithIOError]),
        ],
        .openedTruncating: [
            .to(localDirty, [.emptyCacheFile, .queueUpload]), .to(localDirty, [.emptyCacheFile, .queueUpload]),
            .to(localDirty, [.emptyCacheFile, .queueUpload]),
            .to(localDirty, [.cancelHydration, .emptyCacheFile, .queueUpload]),
            .to(localDirty, [.cancelHydration, .emptyCacheFile, .queueUpload]),
            .to(localDirty, [.cancelHydration, .emptyCacheFile, .queueUpload]),
            .to(localDirty, [.emptyCacheFile, .queueUpload]), .to(localDirty, [.emptyCacheFile, .queueUpload]),
            .to(localDirty, [.emptyCacheFile, .queueUpload]),
            // The way out of a failed write: every byte from here on is one a program wrote.
            .to(localDirty, [.emptyCacheFile, .queueUpload]),
            .to(localDirty, [.emptyCacheFile, .queueUpload]),
        ],
        .written: [
            .impossible, .impossible, .impossible, .impossible, .impossible, .impossible,
            .to(localDirty, []), .to(localDirty, []), .to(localDirty, []),
            // A later good write does not vouch for the bytes a failed one left.
            .to(localWriteFailed, []),
            .to(lost, []),
        ],
        .writeFailed: [
            .impossible, .impossible, .impossible, .impossible, .impossible, .impossible,
            .to(localWriteFailed, [.reportWriteFailure]), .to(localWriteFailed, [.reportWriteFailure]),
            .to(localWriteFailed, [.reportWriteFailure]), .to(localWriteFailed, []),
            .to(lost, []),
        ],
        .recorded: [
            .to(placeholderDirty, [.queueUpload]), .to(placeholderDirty, [.queueUpload]),
            .to(placeholderDirty, [.queueUpload]),
            .to(hydratingDirty, [.queueUpload]), .to(hydratingDirty, [.queueUpload]),
            .to(hydratingDirty, [.queueUpload]),
            .to(localDirty, [.queueUpload]), .to(localDirty, [.queueUpload]), .to(localDirty, [.queueUpload]),
            .to(localWriteFailed, []),
            .to(lost, []),
        ],
        .uploadTaken: [
            // Uploading: the next round of the same upload takes it again.
            .impossible, .to(placeholderUploading, [.upload(manifestPermit)]),
            .to(placeholderUploading, [.upload(manifestPermit)]),
            .impossible, .to(hydratingUploading, [.upload(manifestPermit)]),
            .to(hydratingUploading, [.upload(manifestPermit)]),
            .impossible, .to(localUploading, [.upload(cacheFilePermit)]),
            .to(localUploading, [.upload(cacheFilePermit)]),
            // Never uploaded: the container's version stays.
            .to(localWriteFailed, [.refuseUpload]),
            .to(lost, [.refuseUpload]),
        ],
        .uploadCommitted: [
            .impossible, .to(placeholderDirty, []), .to(placeholderClean, []),
            .impossible, .to(hydratingDirty, []), .to(hydratingClean, []),
            .impossible, .to(localDirty, []), .to(localClean, []),
            .to(localWriteFailed, []),
            .to(lost, []),
        ],
        .uploadRefused: [
            .impossible, .to(placeholderDirty, [.retryUpload]), .to(placeholderDirty, [.retryUpload]),
            .impossible, .to(hydratingDirty, [.retryUpload]), .to(hydratingDirty, [.retryUpload]),
            .impossible, .to(localDirty, [.retryUpload]), .to(localDirty, [.retryUpload]),
            .to(localWriteFailed, []),
            .to(lost, [.retryUpload]),
        ],
        .remoteContentChanged: [
            .to(placeholderClean, [.dropCacheFile, .invalidateKernelCache]),
            .to(placeholderDirty, [.deferRemoteChange]), .to(placeholderUploading, [.deferRemoteChange]),
            .to(placeholderClean, [.cancelHydration, .dropCacheFile, .invalidateKernelCache]),
            .to(hydratingDirty, [.deferRemoteChange]), .to(hydratingUploading, [.deferRemoteChange]),
            .to(localClean, [.replaceCacheFile, .invalidateKernelCache]),
            .to(localDirty, [.deferRemoteChange]), .to(localUploading, [.deferRemoteChange]),
            .to(localWriteFailed, [.deferRemoteChange]),
            .to(lost, [.deferRemoteChange]),
        ],
        .remoteContentChangedWhileHeld: [
            .to(placeholderClean, [.keepOldContentForOpenHandles, .invalidateKernelCache]),
            .to(placeholderDirty, [.deferRemoteChange]), .to(placeholderUploading, [.deferRemoteChange]),
            .to(placeholderClean, [.keepOldContentForOpenHandles, .invalidateKernelCache]),
            .to(hydratingDirty, [.deferRemoteChange]), .to(hydratingUploading, [.deferRemoteChange]),
            .to(localClean, [.replaceCacheFile, .keepOldContentForOpenHandles, .invalidateKernelCache]),
            .to(localDirty, [.deferRemoteChange]), .to(localUploading, [.deferRemoteChange]),
            .to(localWriteFailed, [.deferRemoteChange]),
            .to(lost, [.deferRemoteChange]),
        ],
        .mergeAdopted: [
            .impossible, .to(placeholderDirty, []),
            .to(placeholderDirty, [.dropCacheFile, .invalidateKernelCache]),
            .impossible, .to(hydratingDirty, []),
            .to(placeholderDirty, [.cancelHydration, .dropCacheFile, .invalidateKernelCache]),
            .impossible, .to(localDirty, []), .to(localDirty, [.replaceCacheFile, .invalidateKernelCache]),
            .to(localWriteFailed, []),
            .to(lost, []),
        ],
        .mergeAdoptedWhileHeld: [
            .impossible, .to(placeholderDirty, []),
            .to(placeholderDirty, [.keepOldContentForOpenHandles, .invalidateKernelCache]),
            .impossible, .to(hydratingDirty, []),
            .to(placeholderDirty, [.keepOldContentForOpenHandles, .invalidateKernelCache]),
            .impossible, .to(localDirty, []),
            .to(localDirty, [.replaceCacheFile, .keepOldContentForOpenHandles, .invalidateKernelCache]),
            .to(localWriteFailed, []),
            .to(lost, []),
        ],
        .hydrationStarted: [
            .to(hydratingClean, [.hydrate]), .to(hydratingDirty, [.hydrate]), .to(hydratingUploading, [.hydrate]),
            .to(hydratingClean, [.hydrate]), .to(hydratingDirty, [.hydrate]), .to(hydratingUploading, [.hydrate]),
            .to(localClean, []), .to(localDirty, []), .to(localUploading, []), .to(localWriteFailed, []),
            .to(lost, [.failWithIOError]),
        ],
        .hydrationFinished: [
            // A driver cancelled meanwhile: ignored.
            .to(placeholderClean, []), .to(placeholderDirty, []), .to(placeholderUploading, []),
            .to(localClean, [.recordResidency]), .to(localDirty, [.recordResidency]),
            .to(localUploading, [.recordResidency]),
            .to(localClean, []), .to(localDirty, []), .to(localUploading, []), .to(localWriteFailed, []),
            .to(lost, []),
        ],
        .hydrationFailed: [
            .to(placeholderClean, []), .to(placeholderDirty, []), .to(placeholderUploading, []),
            .to(placeholderClean, [.failWaitingReaders]), .to(placeholderDirty, [.failWaitingReaders]),
            .to(placeholderUploading, [.failWaitingReaders]),
            .to(localClean, []), .to(localDirty, []), .to(localUploading, []), .to(localWriteFailed, []),
            .to(lost, []),
        ],
        .evict: [
            .to(placeholderClean, [.dropCacheFile]), .to(placeholderDirty, [.dropCacheFile]),
            .to(placeholderUploading, [.dropCacheFile]),
            .to(hydratingClean, [.refuseEviction]), .to(hydratingDirty, [.refuseEviction]),
            .to(hydratingUploading, [.refuseEviction]),
            .to(placeholderClean, [.recordResidency, .dropCacheFile, .invalidateKernelCache]),
            .to(localDirty, [.refuseEviction]), .to(localUploading, [.refuseEviction]),
            .to(localWriteFailed, [.refuseEviction]),
            .to(lost, [.refuseEviction]),
        ],
        .cacheFileMissing: [
            .to(placeholderClean, []), .to(placeholderDirty, []), .to(placeholderUploading, []),
            .to(hydratingClean, []), .to(hydratingDirty, []), .to(hydratingUploading, []),
            .to(placeholderClean, [.recordResidency]),
            // Never an empty file over the container's version.
            .to(lost, [.markLost]), .to(lost, [.markLost]), .to(lost, [.markLost]),
            .to(lost, []),
        ],
        .cacheFileShort: [
            .to(placeholderClean, []), .to(placeholderDirty, []), .to(placeholderUploading, []),
            .to(hydratingClean, []), .to(hydratingDirty, []), .to(hydratingUploading, []),
            // Today queued as a local change; the container's copy is the good one.
            .to(placeholderClean, [.recordResidency, .dropCacheFile]),
            .to(lost, [.markLost]), .to(lost, [.markLost]), .to(lost, [.markLost]),
            .to(lost, []),
        ],
        .cacheFileLonger: [
            .to(placeholderClean, []), .to(placeholderDirty, []), .to(placeholderUploading, []),
            .to(hydratingClean, []), .to(hydratingDirty, []), .to(hydratingUploading, []),
            .to(localDirty, [.queueUpload]), .to(localDirty, [.queueUpload]), .impossible,
            .to(localWriteFailed, []),
            .to(lost, []),
        ],
        .cachedCopyDamaged: [
            .impossible, .impossible, .impossible, .impossible, .impossible, .impossible,
            .to(placeholderClean, [.recordResidency]), .impossible, .impossible, .impossible,
            .impossible,
        ],
    ]

    static let cases: [Case] = Event.allCases.flatMap { event in
        zip(State.reachable, table[event] ?? []).map { Case(state: $0, event: event, expected: $1) }
    }

    @Test func theTableCoversEveryReachablePair() {
        #expect(State.reachable.count == 11)
        for event in Event.allCases {
            #expect(Self.table[event]?.count == State.reachable.count, "row \(event)")
        }
        #expect(Self.cases.count == Event.allCases.count * State.reachable.count)
    }

    @Test(arguments: cases)
    func transitions(_ testCase: Case) {
        let result = ContentLifecycle.transition(from: testCase.state, on: testCase.event)
        switch testCase.expected {
        case .to(let state, let actions):
            #expect(result.state == state)
            #expect(result.actions == actions)
            #expect(result.diagnostic == nil)
        case .impossible:
            #expect(result.state == testCase.state)
            #expect(result.actions.isEmpty)
            #expect(result.diagnostic != nil)
        }
    }

    @Test func unreachableStatesAnswerEveryEventWithADiagnostic() {
        let unreachable = ContentLifecycle.Residency.allCases.flatMap { residency in
            ContentLifecycle.Modification.allCases.map { State(residency, $0) }
        }.filter { !$0.isReachable }
        #expect(unreachable.count == 5)
        for state in unreachable {
            for event in Event.allCases {
                let result = ContentLifecycle.transition(from: state, on: event)
                #expect(result.state == state && result.actions.isEmpty && result.diagnostic != nil)
            }
        }
    }

    /// "Cache content lost" and "write failed" never produce an upload, whatever comes: no
    /// sequence of events reaches `.upload` without first leaving them by truncation.
    @Test func lostAndWriteFailedNeverUpload() {
        for state in [Self.lost, Self.localWriteFailed] {
            #expect(state.uploadPermit == nil)
            var frontier: Set<State> = [state]
            var seen = frontier
            while let current = frontier.popFirst() {
                for event in Event.allCases where event != .openedTruncating {
                    let result = ContentLifecycle.transition(from: current, on: event)
                    #expect(
                        !result.actions.contains { if case .upload = $0 { true } else { false } },
                        "\(event) in \(current)")
                    #expect(!result.actions.contains(.queueUpload), "\(event) in \(current)")
                    if seen.insert(result.state).inserted { frontier.insert(result.state) }
                }
            }
            #expect(seen.allSatisfy { $0.residency == .lost || $0.modification == .writeFailed })
        }
    }

    @Test func onlyDirtyStatesWithContentOrAManifestGetAPermit() {
        for state in State.reachable {
            let permit = state.uploadPermit
            switch (state.residency, state.modification) {
            case (.local, .dirty): #expect(permit?.content == .cacheFile)
            case (.placeholder, .dirty), (.hydrating, .dirty): #expect(permit?.content == .knownManifest)
            default: #expect(permit == nil, "\(state)")
            }
        }
    }

    @Test func theNodesFlagsMapToStates() {
        typealias S = ContentLifecycle.State
        #expect(S(downloadRunning: false, isPlaceholder: true, hasLocalChanges: false) == Self.placeholderClean)
        #expect(S(downloadRunning: true, isPlaceholder: true, hasLocalChanges: true) == Self.hydratingDirty)
        #expect(S(downloadRunning: false, isPlaceholder: false, hasLocalChanges: false) == Self.localClean)
        #expect(S(downloadRunning: false, isPlaceholder: false, hasLocalChanges: true) == Self.localDirty)
        #expect(
            S(downloadRunning: false, isPlaceholder: false, hasLocalChanges: true, uploadInFlight: true)
                == Self.localUploading)
        // No local change, nothing in flight, whatever the caller thinks.
        #expect(
            S(downloadRunning: false, isPlaceholder: false, hasLocalChanges: false, uploadInFlight: true)
                == Self.localClean)
    }

    @Test func aLookAtTheCacheFileGivesItsEvent() {
        #expect(ContentLifecycle.cacheFileCheck(recorded: 10, onDisk: nil) == .cacheFileMissing)
        #expect(ContentLifecycle.cacheFileCheck(recorded: 10, onDisk: 0) == .cacheFileShort)
        #expect(ContentLifecycle.cacheFileCheck(recorded: 10, onDisk: 9) == .cacheFileShort)
        #expect(ContentLifecycle.cacheFileCheck(recorded: 10, onDisk: 11) == .cacheFileLonger)
        #expect(ContentLifecycle.cacheFileCheck(recorded: 10, onDisk: 10) == nil)
        #expect(ContentLifecycle.cacheFileCheck(recorded: 0, onDisk: nil) == .cacheFileMissing)
    }

    /// The write path on a failing disk, as a sequence: ENOSPC in the middle of a copy, the
    /// close records the file, the uploader finds nothing it may send.
    @Test func aCopyThatHitENOSPCIsNeverUploaded() {
        var state = Self.localClean
        for event: Event in [.openedForWriting, .written, .writeFailed, .written, .recorded, .uploadTaken] {
            state = ContentLifecycle.transition(from: state, on: event).state
        }
        #expect(state == Self.localWriteFailed)
        #expect(ContentLifecycle.transition(from: state, on: .uploadTaken).actions == [.refuseUpload])
        // Rewritten from the start: uploads again.
        state = ContentLifecycle.transition(from: state, on: .openedTruncating).state
        state = ContentLifecycle.transition(from: state, on: .written).state
        #expect(ContentLifecycle.transition(from: state, on: .uploadTaken).actions == [.upload(Self.cacheFilePermit)])
    }
}
