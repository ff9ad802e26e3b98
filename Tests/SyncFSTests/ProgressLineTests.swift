import SyncFS
import Testing

/// `HumanUnits` and `ProgressLine` (doc/CLI.md, "Units" and "Progress"), on a fake clock.
struct HumanUnitsTests {
    @Test func sizesAreBinaryAndLabelledSo() {
        #expect(HumanUnits.bytes(0) == "0 B")
        #expect(HumanUnits.bytes(1) == "1 B")
        #expect(HumanUnits.bytes(1023) == "1023 B")
        #expect(HumanUnits.bytes(1024) == "1.0 KiB")
        #expect(HumanUnits.bytes(1536) == "1.5 KiB")
        #expect(HumanUnits.bytes(3 << 20) == "3.0 MiB")
        #expect(HumanUnits.bytes(799_965_184) == "762.9 MiB")
        #expect(HumanUnits.bytes(1_181_116_006) == "1.1 GiB")
        #expect(HumanUnits.bytes((1 << 20) - 1) == "1.0 MiB", "rounded up to the next unit, not 1024.0 KiB")
        #expect(HumanUnits.bytes(-5) == "0 B")
        #expect(HumanUnits.bytes(Int64.max).hasSuffix(" EiB"))
    }

    @Test func countsAgreeWithTheirNoun() {
        #expect(HumanUnits.count(0, "change") == "0 changes")
        #expect(HumanUnits.count(1, "change") == "1 change")
        #expect(HumanUnits.count(2, "change") == "2 changes")
        #expect(HumanUnits.count(1, "attempt") == "1 attempt")
        #expect(HumanUnits.count(3, "entry", "entries") == "3 entries")
    }

    @Test func ratesAndDurations() {
        #expect(HumanUnits.rate(0) == "0 B/s")
        #expect(HumanUnits.rate(.infinity) == "0 B/s")
        #expect(HumanUnits.rate(12.5 * 1024 * 1024) == "12.5 MiB/s")
        #expect(HumanUnits.duration(0) == "0 s")
        #expect(HumanUnits.duration(44.2) == "45 s")
        #expect(HumanUnits.duration(185) == "3 min 05 s")
        #expect(HumanUnits.duration(7620) == "2 h 07 min")
        #expect(HumanUnits.duration(1e9) == "more than 99 h")
        #expect(HumanUnits.duration(.nan) == "unknown")
    }
}

struct ProgressLineTests {
    final class Fake {
        var now = 100.0
        var output: [String] = []
    }

    func line(_ style: ProgressLine.Style, _ fake: Fake) -> ProgressLine {
        ProgressLine(style: style, clock: { fake.now }, write: { fake.output.append($0) })
    }

    func snapshot(_ done: Int64, total: Int64 = 100 << 20, left: Int = 1) -> ProgressLine.Snapshot {
        .init(verb: "syncing", itemsLeft: left, noun: "change", done: done, total: total)
    }

    @Test func linesComeAtMostOncePerSecondAndOnlyWhenSomethingChanged() {
        let fake = Fake()
        let progress = line(.lines, fake)
        progress.update(snapshot(0))
        #expect(fake.output == ["syncing: 1 change left, 0% (0 B of 100.0 MiB)\n"])
        // The same state 23 times over 23 s: nothing more (the bug: a line each poll).
        for _ in 0..<23 {
            fake.now += 1
            progress.update(snapshot(0))
        }
        #expect(fake.output.count == 1)
        // Changes within the second wait for it.
        fake.now += 0.2
        progress.update(snapshot(10 << 20))
        #expect(fake.output.count == 2)
        fake.now += 0.3
        progress.update(snapshot(20 << 20))
        #expect(fake.output.count == 2)
        fake.now += 0.8
        progress.update(snapshot(30 << 20))
        #expect(fake.output.count == 3)
        #expect(fake.output.allSatisfy { $0.hasSuffix("\n") && !$0.contains("\r") })
        progress.finish("syncing: done")
        #expect(fake.output.last == "syncing: done\n")
    }

    @Test func rateAndTimeLeftComeFromTheLastSeconds() {
        let fake = Fake()
        let progress = line(.lines, fake)
        progress.update(snapshot(0))
        #expect(progress.rate == nil)
        for step in 1...4 {
            fake.now += 1
            progress.update(snapshot(Int64(step) * (10 << 20)))
        }
        #expect(progress.rate == Double(10 << 20))
        #expect(
            fake.output.last == "syncing: 1 change left, 40% (40.0 MiB of 100.0 MiB), 10.0 MiB/s, 6 s left\n",
            "\(fake.output)")
        // Samples older than the window do not count: a stall brings the rate down.
        for _ in 0..<20 {
            fake.now += 1
            progress.update(snapshot(40 << 20))
        }
        #expect((progress.rate ?? 0) == 0)
    }

    @Test func aTerminalLineIsRedrawnInPlaceAndEndedByFinish() {
        let fake = Fake()
        let progress = line(.redraw, fake)
        progress.update(snapshot(0, left: 2))
        fake.now += 0.5
        progress.update(snapshot(50 << 20, left: 2))
        fake.now += 0.01
        progress.update(snapshot(51 << 20, left: 2))
        #expect(fake.output.count == 2, "redraws are limited to one per 0.1 s: \(fake.output)")
        #expect(fake.output.allSatisfy { $0.hasPrefix("\r\u{1B}[K") && !$0.contains("\n") })
        #expect(fake.output[1].contains("2 changes left, 50%"))
        progress.finish("syncing: done")
        #expect(fake.output.last == "\r\u{1B}[Ksyncing: done\n")
    }

    @Test func aNoteAndNoTotal() {
        let fake = Fake()
        let progress = line(.lines, fake)
        var waiting = snapshot(0, total: 0, left: 3)
        waiting.note = "offline since 15:02:11, waiting"
        progress.update(waiting)
        #expect(fake.output == ["syncing: 3 changes left, offline since 15:02:11, waiting\n"])
        progress.finish(nil)
        #expect(fake.output.count == 1)
    }

    @Test func drainTotalsGrowWithNewWorkAndNeverGoBack() {
        var totals = DrainTotals()
        totals.observe(left: 100)
        #expect(totals == drained(0, 100))
        totals.observe(left: 60)
        #expect(totals == drained(40, 100))
        totals.observe(left: 90)
        #expect(totals == drained(40, 130), "30 more bytes were queued")
        totals.observe(left: 0)
        #expect(totals == drained(130, 130))
    }

    private func drained(_ done: Int64, _ total: Int64) -> DrainTotals {
        var totals = DrainTotals()
        totals.observe(left: total)
        totals.observe(left: total - done)
        return totals
    }
}

struct TerminalTextTests {
    @Test func controlCharactersAreWrittenVisibly() {
        #expect(TerminalText.safe("docs/report.txt") == "docs/report.txt")
        #expect(TerminalText.safe("café/日本.txt") == "café/日本.txt")
        #expect(TerminalText.safe("a\u{1B}]0;owned\u{07}b") == "a\\x1B]0;owned\\x07b")
        #expect(TerminalText.safe("line\nnext\r\t") == "line\\x0Anext\\x0D\\x09")
        #expect(TerminalText.safe("\u{7F}\u{9B}") == "\\x7F\\x9B")
        #expect(TerminalText.safe("x\u{202E}gpj.exe") == "x\\u{202E}gpj.exe")
    }
}
