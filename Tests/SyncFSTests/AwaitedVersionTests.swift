import Foundation
import TestSupport
import Testing

@testable import SyncFS

/// `AwaitedVersion`: a value that only moves forward, and waits that end when it gets there or
/// at their deadline.
@Suite struct AwaitedVersionTests {
    @Test func aValueAlreadyReachedEndsTheWaitAtOnce() {
        let version = AwaitedVersion(5)
        #expect(version.wait(forAtLeast: 5, within: .zero))
        #expect(version.wait(forAtLeast: 3, within: .zero))
    }

    @Test func itOnlyMovesForward() {
        let version = AwaitedVersion()
        version.advance(to: 7)
        version.advance(to: 4)
        #expect(version.value == 7)
        #expect(version.increment() == 8)
        #expect(version.value == 8)
    }

    @Test func aWaitForAValueNotReachedTimesOut() {
        let version = AwaitedVersion(2)
        let started = ContinuousClock.now
        #expect(!version.wait(forAtLeast: 3, within: .milliseconds(50)))
        #expect(ContinuousClock.now - started >= .milliseconds(50))
        #expect(version.value == 2)
    }

    /// A wait that could last ten minutes ends as soon as another thread advances the value far
    /// enough (an advance short of it does not end it).
    @Test func anAdvanceEndsAWaitInProgress() throws {
        let version = AwaitedVersion()
        let waited = Thread.detachNewThreadWithResult { version.wait(forAtLeast: 3, within: .seconds(600)) }
        #expect(waitUntil { version.waiting == 1 }, "the thread is inside its wait")
        version.advance(to: 2)
        #expect(version.waiting == 1, "2 is short of its target")
        version.advance(to: 3)
        #expect(try waited.value(within: .seconds(30)))
    }
}
