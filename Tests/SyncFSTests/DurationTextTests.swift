import Testing

@testable import SyncFS

/// `pause --for`'s durations (`DurationText`).
@Suite struct DurationTextTests {
    @Test func weeksDaysHoursMinutesAndSecondsLargestFirst() throws {
        let table: [(String, Int)] = [
            ("30m", 1800), ("2h", 7200), ("1h30m", 5400), ("90s", 90), ("1h0m5s", 3605), ("1s", 1),
            ("0h1s", 1), ("8784h", 366 * 24 * 3600), ("7d", 604_800), ("2w3d", 17 * 86_400), ("366d", 366 * 86_400),
        ]
        for (text, seconds) in table {
            #expect(try DurationText.seconds(text).get() == seconds, "\(text)")
        }
    }

    @Test func anythingElseIsRefusedWithTheReason() {
        let table: [(String, String)] = [
            ("", "empty"), ("30", "needs a unit"), ("m", "needs a number"), ("1.5h", "unexpected '.'"),
            ("-5m", "unexpected '-'"), ("1y", "unexpected 'y'"), ("1d1w", "largest first"),
            ("367d", "longer than 366 days"), ("30m1h", "largest first"), ("1m1m", "largest first"),
            ("0s", "at least 1s"), ("8785h", "longer than 366 days"), ("1234567890s", "too long"),
            ("1h 30m", "unexpected ' '"), ("٣m", "unexpected"),
        ]
        for (text, reason) in table {
            guard case .failure(let error) = DurationText.seconds(text) else {
                Issue.record("\(text) was accepted")
                continue
            }
            #expect(error.description.contains(reason), "\(text): \(error)")
            #expect(error.description.contains("like 30m, 2h, 1h30m, 90s or 7d"))
        }
    }
}
