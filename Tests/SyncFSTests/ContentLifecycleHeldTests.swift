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
            [0, ENOSPC, EIO].map { Held(residency: residency, hasUnrecordedWrites: unrecorded, writeFailure: $0) }
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
        #expect(Held(residency: .local).state(queued: true, uploadInFlight: true) == State(.local, .uploading))
    }

    /// `Node.noteContentWritten` sets only the unrecorded-writes mark, without the table: for
    /// every state whose bytes are local the table's `written` must leave the residency as it is.
    @Test func theWritePathsShareOfWrittenIsTheTables() {
        for held in Self.everyHeld where held.hasLocalBytes {
            for queued in [false, true] {
                let transition = ContentLifecycle.transition(from: held.state(queued: queued), on: .written)
                #expect(transition.diagnostic == nil && transition.actions.isEmpty)
                var expected = held
                expected.hasUnrecordedWrites = true
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
