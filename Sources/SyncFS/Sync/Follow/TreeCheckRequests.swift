import Dispatch
import Synchronization

/// Requests for the tree check and their answers. The follower thread makes the checks (it
/// holds the feed cursor the container's digest is compared at); a switch of server asks for
/// one, `verify` asks and waits for its answer.
///
/// Contract: `request` marks a check as wanted (repeated requests before it is made coalesce);
/// `pending` tells the follower whether one is wanted; `finish` answers every waiter that asked
/// before the check began and clears the request, `fail` answers them with an error and keeps
/// the request (the follower tries again after its failure pause).
final class TreeCheckRequests: Sendable {
    /// A check made with a cursor other than the container's is retried this many times (the
    /// feed moving meanwhile) before the tree is compared by reading the feed whole.
    static let settleAttempts = 5

    private final class Waiter: Sendable {
        let asked: UInt64
        let done = DispatchSemaphore(value: 0)
        let answer = Mutex<TreeCheckReport?>(nil)

        init(asked: UInt64) { self.asked = asked }
    }

    private struct State {
        var asked: UInt64 = 0
        var answered: UInt64 = 0
        var unsettled = 0
        var failures = 0
        var waiters: [Waiter] = []
    }

    private let state = Mutex(State())

    /// Asks for a check; returns the request's number.
    @discardableResult
    func request() -> UInt64 {
        state.withLock { state in
            state.asked += 1
            return state.asked
        }
    }

    /// The newest request not yet answered, if any (the follower checks for it).
    var pending: UInt64? {
        state.withLock { $0.asked > $0.answered ? $0.asked : nil }
    }

    /// Counts one check put off because the feed moved; returns how many in a row.
    func noteUnsettled() -> Int {
        state.withLock { state in
            state.unsettled += 1
            return state.unsettled
        }
    }

    /// Asks for a check and waits up to `timeout` for its report (nil: none within it).
    func requestAndWait(timeout: Duration, wake: () -> Void) -> TreeCheckReport? {
        let waiter = Waiter(asked: request())
        state.withLock { $0.waiters.append(waiter) }
        wake()
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        guard waiter.done.wait(timeout: .now() + seconds) == .success else {
            state.withLock { state in state.waiters.removeAll { $0 === waiter } }
            return nil
        }
        return waiter.answer.withLock { $0 }
    }

    /// The check begun for request `asked` is done: answers it and every earlier one.
    func finish(_ asked: UInt64, _ report: TreeCheckReport) {
        answer(upTo: asked, report, clear: true)
    }

    /// The check for request `asked` failed: answers its waiters with the error; the request
    /// stays. Returns how many checks failed in a row.
    @discardableResult
    func fail(_ asked: UInt64, _ error: String) -> Int {
        var report = TreeCheckReport(entries: 0, matched: false)
        report.error = error
        answer(upTo: asked, report, clear: false)
        return state.withLock { state in
            state.failures += 1
            return state.failures
        }
    }

    private func answer(upTo asked: UInt64, _ report: TreeCheckReport, clear: Bool) {
        let done = state.withLock { state -> [Waiter] in
            if clear {
                state.answered = max(state.answered, asked)
                state.unsettled = 0
                state.failures = 0
            }
            let done = state.waiters.filter { $0.asked <= asked }
            state.waiters.removeAll { $0.asked <= asked }
            return done
        }
        for waiter in done {
            waiter.answer.withLock { $0 = report }
            waiter.done.signal()
        }
    }
}
