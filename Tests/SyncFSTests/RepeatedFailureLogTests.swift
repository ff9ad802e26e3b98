import Testing

@testable import SyncFS

/// `RepeatedFailureLog`: a failure that repeats is logged when it starts, in a summary at most
/// once per interval, and once when it ends — however many attempts fail meanwhile.
@Suite struct RepeatedFailureLogTests {
    @Test func aRepeatedFailureCostsOneLineToStartOnePerIntervalAndOneToEnd() {
        let log = RepeatedFailureLog(interval: 100)
        var logged = 0
        for now in stride(from: Int64(0), to: 1000, by: 1) where log.admit("unavailable", now: now).logged {
            logged += 1
        }
        #expect(logged == 10, "1000 attempts over 10 intervals: one line per interval, not per attempt")
        let summary = log.admit("unavailable", now: 1100)
        #expect(summary.logged && summary.suppressed == 99)
        #expect(log.isFailing { $0 == "unavailable" })
        let ended = log.end(now: 1500) { $0 == "unavailable" }
        #expect(ended.count == 1 && ended.first?.failures == 1001 && ended.first?.lasted == 1500)
        #expect(!log.isFailing { $0 == "unavailable" })
        #expect(log.end(now: 1600) { $0 == "unavailable" }.isEmpty, "ends once")
        let again = log.admit("unavailable", now: 1601)
        #expect(again.logged && again.suppressed == 0, "a new outage starts with its own first line")
    }

    @Test func kindsAreIndependent() {
        let log = RepeatedFailureLog(interval: 100)
        #expect(log.admit("busy", now: 0).logged)
        #expect(log.admit("unavailable", now: 1).logged)
        #expect(!log.admit("busy", now: 2).logged)
        #expect(log.end(now: 3) { $0 == "busy" }.map(\.kind) == ["busy"])
        #expect(log.isFailing { $0 == "unavailable" })
    }

    /// Proof that things work from before the last failure ends nothing (an upload attempt that
    /// made no container call is no proof the container is back).
    @Test func anAnswerOlderThanTheLastFailureEndsNothing() {
        let log = RepeatedFailureLog(interval: 100)
        _ = log.admit("unavailable", now: 10)
        _ = log.admit("unavailable", now: 20)
        #expect(log.end(now: 30, failedBefore: 15) { $0 == "unavailable" }.isEmpty)
        #expect(log.isFailing { $0 == "unavailable" })
        #expect(log.end(now: 30, failedBefore: 25) { $0 == "unavailable" }.first?.failures == 2)
    }

    @Test func durationsReadWell() {
        #expect(RepeatedFailureLog.duration(45_000_000_000) == "45 s")
        #expect(RepeatedFailureLog.duration(185_000_000_000) == "3 min 5 s")
        #expect(RepeatedFailureLog.duration(7_800_000_000_000) == "2 h 10 min")
    }
}
