import Foundation
import SyncBackend
import Testing

@testable import SyncFS

/// `LimitSchedule`: the `--limit-schedule` text and the limits at a given time, on fixed dates
/// (Monday 2026-11-30 is a Monday) in a fixed time zone.
@Suite struct LimitScheduleTests {
    let utc = TimeZone(identifier: "UTC")!

    /// 2026-11-30 (a Monday) plus `days`, at `hour`:`minute` UTC.
    func date(_ days: Int, _ hour: Int, _ minute: Int = 0) -> Date {
        Date(timeIntervalSince1970: 1_795_996_800 + Double(days * 86_400 + hour * 3600 + minute * 60))
    }

    func rate(_ text: String) -> BandwidthRate? { try! BandwidthRate.parse(text) }

    @Test func theReferenceDateIsAMonday() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = utc
        #expect(calendar.component(.weekday, from: date(0, 12)) == 2)
    }

    @Test func workingHoursApplyInsideTheWindowOnlyAndKeepTheUnnamedDirection() throws {
        let schedule = try LimitSchedule(parsing: "Mon-Fri 08:00-18:00 up=1M down=5M")
        let plain = BandwidthLimits(upload: rate("10M"), download: nil)
        let monday = schedule.limits(at: date(0, 9), plain: plain, in: utc)
        #expect(monday == BandwidthLimits(upload: rate("1M"), download: rate("5M")))
        #expect(schedule.limits(at: date(0, 7, 59), plain: plain, in: utc) == plain)
        #expect(schedule.limits(at: date(0, 18), plain: plain, in: utc) == plain, "the end is exclusive")
        #expect(schedule.limits(at: date(4, 17, 59), plain: plain, in: utc).upload == rate("1M"))
        #expect(schedule.limits(at: date(5, 9), plain: plain, in: utc) == plain, "Saturday")
        let uploadOnly = try LimitSchedule(parsing: "08:00-18:00 up=off")
        let limits = uploadOnly.limits(at: date(6, 9), plain: plain, in: utc)
        #expect(limits.upload == nil && limits.download == nil, "off in the window; download kept (none)")
        let keeps = try LimitSchedule(parsing: "08:00-18:00 down=1M").limits(at: date(6, 9), plain: plain, in: utc)
        #expect(keeps.upload == rate("10M") && keeps.download == rate("1M"))
    }

    @Test func severalEntriesListsWrappingRangesAndTheFirstInForceWins() throws {
        let schedule = try LimitSchedule(
            parsing: "Sat,Sun 00:00-24:00 up=off; Mon+Wed 10:00-12:00 up=64K; Fri-Mon 09:00-17:00 up=2M")
        let plain = BandwidthLimits(upload: rate("1M"))
        #expect(schedule.entries.count == 3)
        #expect(schedule.limits(at: date(5, 3), plain: plain, in: utc).upload == nil, "Saturday night: first entry")
        #expect(schedule.limits(at: date(6, 10), plain: plain, in: utc).upload == nil, "Sunday: first wins over third")
        #expect(schedule.limits(at: date(0, 11), plain: plain, in: utc).upload == rate("64K"), "Monday 11:00")
        #expect(schedule.limits(at: date(0, 13), plain: plain, in: utc).upload == rate("2M"), "Monday: Fri-Mon wraps")
        #expect(schedule.limits(at: date(1, 13), plain: plain, in: utc).upload == rate("1M"), "Tuesday: none")
        #expect(schedule.limits(at: date(2, 11), plain: plain, in: utc).upload == rate("64K"), "Wednesday")
        #expect(schedule.entry(at: date(2, 11), in: utc)?.text == "Mon+Wed 10:00-12:00 up=64K")
    }

    @Test func aWindowCrossingMidnightBelongsToTheDayItStarts() throws {
        let schedule = try LimitSchedule(parsing: "Fri 22:00-06:00 down=off")
        let plain = BandwidthLimits(download: rate("1M"))
        #expect(schedule.limits(at: date(4, 23), plain: plain, in: utc).download == nil, "Friday 23:00")
        #expect(schedule.limits(at: date(5, 5, 59), plain: plain, in: utc).download == nil, "Saturday 05:59")
        #expect(schedule.limits(at: date(5, 6), plain: plain, in: utc).download == rate("1M"), "Saturday 06:00")
        #expect(schedule.limits(at: date(3, 23), plain: plain, in: utc).download == rate("1M"), "Thursday 23:00")
        #expect(schedule.limits(at: date(0, 1), plain: plain, in: utc).download == rate("1M"), "Monday 01:00")
    }

    @Test func theSpacelessFormForMountOptionsAndUnitFiles() throws {
        let spaced = try LimitSchedule(parsing: "Sat+Sun 08:00-18:00 up=1M down=5M")
        let slashed = try LimitSchedule(parsing: "sat+sun/08:00-18:00/up=1M/down=5M")
        #expect(spaced.entries.map(\.days) == slashed.entries.map(\.days))
        #expect(spaced.entries.map(\.upload) == slashed.entries.map(\.upload))
        #expect(try LimitSchedule(parsing: "").entries.isEmpty)
        #expect(try LimitSchedule(parsing: " ; ").entries.isEmpty)
    }

    /// A RATE is written as for --upload-limit, so `1M/s` too, in both forms.
    @Test func aRateMayEndInPerSecond() throws {
        let spaced = try LimitSchedule(parsing: "Sat+Sun 08:00-18:00 up=1M/s down=5M/s")
        let slashed = try LimitSchedule(parsing: "sat+sun/08:00-18:00/up=1M/s/down=5M/s")
        for schedule in [spaced, slashed] {
            #expect(schedule.entries.map(\.upload) == [.some(rate("1M"))])
            #expect(schedule.entries.map(\.download) == [.some(rate("5M"))])
        }
        #expect(throws: LimitSchedule.ParseError.self) { try LimitSchedule(parsing: "s Mon 08:00-18:00 up=1M") }
    }

    @Test func localTimeIsWallClockTimeAcrossADaylightSavingChange() throws {
        // Europe/Berlin leaves summer time on Sunday 2026-10-25 at 03:00 (back to 02:00): the
        // hour 02:00-03:00 happens twice, and a window on it is in force both times.
        let berlin = TimeZone(identifier: "Europe/Berlin")!
        let schedule = try LimitSchedule(parsing: "Sun 02:00-03:00 up=1K")
        let firstPass = Date(timeIntervalSince1970: 1_792_888_200)  // 00:30 UTC = 02:30 CEST
        let secondPass = Date(timeIntervalSince1970: 1_792_891_800)  // 01:30 UTC = 02:30 CET
        #expect(schedule.entry(at: firstPass, in: berlin) != nil)
        #expect(schedule.entry(at: secondPass, in: berlin) != nil)
        #expect(schedule.entry(at: secondPass.addingTimeInterval(3600), in: berlin) == nil)
    }

    @Test(arguments: [
        "Mon-Fri up=1M", "Mon-Fri 08:00-18:00", "Funday 08:00-18:00 up=1M", "Mon-Fri 8-18 up=1M",
        "Mon 08:00-08:00 up=1M", "Mon 24:00-01:00 up=1M", "Mon 08:60-09:00 up=1M", "Mon 08:00-18:00 up=1M up=2M",
        "Mon 08:00-18:00 up=-1M", "Mon 08:00-18:00 up=99999999999999999999G", "Mon 08:00-18:00 sideways=1M",
        "Mon 08:00-18:00 09:00-10:00 up=1M", "Mon-Tue-Wed 08:00-18:00 up=1M", "08:00-18:00 Mon up=1M",
        "Mon 08:00-18:00 up=1M; nonsense", String(repeating: "Mon 08:00-18:00 up=1M;", count: 150),
    ])
    func refusesWhatIsNotASchedule(_ text: String) {
        #expect(throws: LimitSchedule.ParseError.self) { try LimitSchedule(parsing: text) }
    }
}
