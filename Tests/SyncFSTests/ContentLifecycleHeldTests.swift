import Glibc
import Testing

@testable import SyncFS

/// What a node holds of its content state (`ContentLifecycle.Held`): the word it is packed in,
/// the state it stands for, and the write path's lock-free share of `written` against the table.
struct ContentLifecycleHeldTests {
    typealias Held = ContentLifecycle.Held
    typealias State = ContentLifecycle.State

    static let everyHeld: [Held] = ContentLifecycle.Residency.allCases.flatMap { residency in
        [false, true].flatMap { unrecorded in
            [false, true].flatMap { taken in
                [0, ENOSPC, EIO].map {
                    Held(
                        residency: residency, hasUnrecordedWrites: unrecorded, writeFailure: $0,
                        isTakenForUpload: taken)
                }
            }
        }
    }

    @Test func everyHeldStateSurvivesItsWord() {
        for held in Self.everyHeld { #expect(Held(word: held.word) == held, "\(held)") }
        #expect(Set(Self.everyHeld.map(\.word)).count == Self.everyHeld.count)
        #expect(Held(residency: .placeholder).word == 0, "a new placeholder is the zero word")
        for held in Self.everyHeld {
            #expect(Held.hasLocalBytes(held.word) == held.hasLocalBytes, "\(held)")
            #expect(Held.isLost(held.word) == (held.residency == .lost), "\(held)")
        }
    }

    @Test func theHeldPartAndTheOutboxGiveAReachableState() {
        for held in Self.everyHeld {
            for queued in [false, true] {
                let state = held.state(queued: queued)
                #expect(state.isReachable, "\(held) queued \(queued)")
                #expect(state.residency == held.residency)
            }
        }
        #expect(Held(residency: .local).state(queued: false) == State(.local, .clean))
        #expect(Held(residency: .local, hasUnrecordedWrites: true).state(queued: false) == State(.local, .dirty))
        #expect(Held(residency: .placeholder).state(queued: true) == State(.placeholder, .dirty))
        #expect(Held(residency: .local, writeFailure: ENOSPC).state(queued: true) == State(.local, .writeFailed))
        #expect(Held(residency: .lost, writeFailure: ENOSPC).state(queued: false) == State(.lost, .dirty))
        #expect(Held(residency: .local, isTakenForUpload: true).state(queued: true) == State(.local, .uploading))
        let takenPlaceholder = Held(residency: .placeholder, isTakenForUpload: true)
        #expect(
            takenPlaceholder.state(queued: false) == State(.placeholder, .uploading),
            "taken is queued, whatever the outbox says meanwhile")
        #expect(
            Held(residency: .local, hasUnrecordedWrites: true, isTakenForUpload: true).state(queued: true)
                == State(.local, .uploading), "written before it was taken: what was taken has those writes")
        #expect(
            Held(residency: .local, writeFailure: EIO, isTakenForUpload: true).state(queued: true)
                == State(.local, .writeFailed))
    }

    /// The held part after `event` in the state it stands for with an outbox row.
    private func step(_ held: Held, _ event: ContentLifecycle.Event) -> Held {
        let transition = ContentLifecycle.transition(from: held.state(queued: true), on: event)
        #expect(transition.diagnostic == nil, "\(event) in \(held)")
        return held.after(event, transition)
    }

    /// The taken-for-upload mark is the table's `uploading`: set by taking, kept by what leaves
    /// the content as it was taken, cleared by the upload's end and by every change.
    @Test func theTakenMarkFollowsTheUpload() {
        let queued = Held(residency: .local)
        let taken = step(queued, .uploadTaken)
        #expect(taken == Held(residency: .local, isTakenForUpload: true))
        #expect(step(taken, .uploadTaken) == taken, "the next round of the same upload takes it again")
        #expect(step(taken, .uploadCommitted).state(queued: false) == State(.local, .clean))
        #expect(step(taken, .uploadRefused) == queued)
        let written = step(taken, .written)
        #expect(written == Held(residency: .local, hasUnrecordedWrites: true), "written since taken: dirty")
        #expect(step(written, .uploadCommitted).state(queued: true) == State(.local, .dirty))
        let changes: [ContentLifecycle.Event] = [
            .recorded, .openedTruncating, .writeFailed, .cacheFileMissing, .cacheFileShort, .mergeAdopted,
            .mergeAdoptedWhileHeld,
        ]
        for event in changes { #expect(!step(taken, event).isTakenForUpload, "\(event)") }
        let unchanged: [ContentLifecycle.Event] = [
            .openedForWriting, .remoteContentChanged, .remoteContentChangedWhileHeld, .evict,
        ]
        for event in unchanged { #expect(step(taken, event) == taken, "\(event)") }
        // A placeholder's metadata upload, with a download started meanwhile.
        let takenPlaceholder = step(Held(residency: .placeholder), .uploadTaken)
        #expect(takenPlaceholder.state(queued: true) == State(.placeholder, .uploading))
        #expect(step(takenPlaceholder, .hydrationStarted).state(queued: true) == State(.hydrating, .uploading))
    }

    /// `Node.noteContentWritten` sets the unrecorded-writes mark and clears the taken one, without
    /// the table: for every state whose bytes are local the table's `written` must leave the
    /// residency as it is, and never leave it `uploading`.
    @Test func theWritePathsShareOfWrittenIsTheTables() {
        for held in Self.everyHeld where held.hasLocalBytes {
            for queued in [false, true] {
                let transition = ContentLifecycle.transition(from: held.state(queued: queued), on: .written)
                #expect(transition.diagnostic == nil && transition.actions.isEmpty)
                var expected = held
                expected.hasUnrecordedWrites = true
                expected.isTakenForUpload = false
                #expect(held.after(.written, transition) == expected, "\(held)")
            }
        }
    }

    @Test func recordingClearsTheUnrecordedWritesAndTruncationTheWriteFailure() {
        let written = Held(residency: .local, hasUnrecordedWrites: true, writeFailure: ENOSPC)
        let recorded = ContentLifecycle.transition(from: written.state(queued: true), on: .recorded)
        #expect(written.after(.recorded, recorded) == Held(residency: .local, writeFailure: ENOSPC))
        let truncated = ContentLifecycle.transition(from: written.state(queued: true), on: .openedTruncating)
        #expect(written.after(.openedTruncating, truncated) == Held(residency: .local, hasUnrecordedWrites: true))
        let lost = Held(residency: .lost, writeFailure: EIO)
        let failedAgain = ContentLifecycle.transition(from: lost.state(queued: true), on: .writeFailed)
        #expect(lost.after(.writeFailed, failedAgain, writeFailure: ENOSPC) == lost, "the first errno stays")
    }
}
