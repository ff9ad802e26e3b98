import Foundation
import SyncBackend
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// `BandwidthLimiter`: which limit is in force (a `limit` override over the schedule over the
/// options), and that a wait ends on `stop` and follows a new limit at once.
@Suite struct BandwidthLimiterTests {
    func rate(_ text: String) -> BandwidthRate? { try! BandwidthRate.parse(text) }

    /// A Monday at 09:00 UTC (2026-11-30).
    let mondayMorning = Date(timeIntervalSince1970: 1_795_996_800 + 9 * 3600)

    @Test func theOverrideWinsOverTheScheduleWhichWinsOverTheOptions() throws {
        var configuration = BandwidthLimiter.Configuration()
        configuration.plain = BandwidthLimits(upload: rate("10M"), download: rate("10M"))
        configuration.schedule = try LimitSchedule(parsing: "00:00-24:00 up=1M")
        var inForce = BandwidthLimiter.inForce(configuration, at: mondayMorning)
        #expect(inForce.limits == BandwidthLimits(upload: rate("1M"), download: rate("10M")))
        #expect(inForce.uploadSource == .schedule && inForce.downloadSource == .option)
        #expect(inForce.scheduleEntry == "00:00-24:00 up=1M")
        configuration.overrides = BandwidthOverrides(upload: .some(nil))
        inForce = BandwidthLimiter.inForce(configuration, at: mondayMorning)
        #expect(inForce.limits.upload == nil && inForce.uploadSource == .command, "limit --upload off")
        configuration.overrides = BandwidthOverrides(download: .some(rate("64K")))
        inForce = BandwidthLimiter.inForce(configuration, at: mondayMorning)
        #expect(inForce.limits == BandwidthLimits(upload: rate("1M"), download: rate("64K")))
    }

    @Test func overridesReadBackFromTheirStoredText() {
        let overrides = BandwidthOverrides(upload: .some(rate("2M")), download: .some(nil))
        #expect(overrides.text == "up=2M;down=off")
        #expect(BandwidthOverrides(text: overrides.text) == overrides)
        #expect(BandwidthOverrides(text: "down=64K") == BandwidthOverrides(download: .some(rate("64K"))))
        #expect(BandwidthOverrides(text: "up=banana") == nil)
        #expect(BandwidthOverrides(text: "sideways=1M") == nil)
    }

    /// A clock the test moves; waits still happen on real time, so the rates are chosen for
    /// delays of hours (ended by the test) or none.
    final class TestClock: Sendable {
        let monotonic = Mutex(Duration.zero)
        var read: @Sendable () -> (monotonic: Duration, wall: Date) {
            { [self] in (monotonic.withLock { $0 }, Date(timeIntervalSince1970: 1_795_996_800)) }
        }
    }

    @Test func stopEndsAWaitAndEveryLaterOne() {
        var configuration = BandwidthLimiter.Configuration()
        configuration.plain = BandwidthLimits(upload: rate("1K"))
        let clock = TestClock()
        let limiter = BandwidthLimiter(configuration, clock: clock.read)
        try? limiter.beforeUpload(100 << 20)  // goes at once, leaves a debt of more than a day
        let outcome = ThreadShared<SyncFailure?>(nil)
        let thread = Thread {
            do throws(SyncFailure) { try limiter.beforeUpload(1) } catch {
                outcome.value.withLock { $0 = error }
            }
        }
        thread.start()
        #expect(waitUntil { limiter.waiting > 0 })
        limiter.stop()
        #expect(waitUntil { outcome.value.withLock { $0 } != nil })
        #expect(outcome.value.withLock { $0 }?.isWaiting == true, "a busy failure, retried after the next mount")
        #expect(throws: SyncFailure.self) { try limiter.beforeDownload() }
    }

    @Test func aNewLimitEndsAWaitForTheOldOne() {
        var configuration = BandwidthLimiter.Configuration()
        configuration.plain = BandwidthLimits(download: rate("1K"))
        let limiter = BandwidthLimiter(configuration, clock: TestClock().read)
        limiter.afterDownload(100 << 20)  // 100 MiB at 1 KiB/s: more than a day of debt
        let done = ThreadShared(false)
        let thread = Thread {
            try? limiter.beforeDownload()
            done.value.withLock { $0 = true }
        }
        thread.start()
        #expect(waitUntil { limiter.waiting > 0 })
        #expect(!done.value.withLock { $0 })
        limiter.setOverrides(BandwidthOverrides(download: .some(nil)))
        #expect(waitUntil { done.value.withLock { $0 } })
        #expect(limiter.inForce.downloadSource == .command)
        limiter.stop()
    }

    /// A chunk already downloaded is handed over at once, however large its debt: the NEXT
    /// download waits it out (here 4 MiB at 64 KiB/s: 63 s on the test's clock), before it starts.
    @Test func aDownloadedChunkIsNotHeldTheNextDownloadWaits() {
        var configuration = BandwidthLimiter.Configuration()
        configuration.plain = BandwidthLimits(download: rate("64K"))
        let clock = TestClock()
        let limiter = BandwidthLimiter(configuration, clock: clock.read)
        let steps = ThreadShared(0)
        let thread = Thread {
            try? limiter.beforeDownload()
            limiter.afterDownload(4 << 20)
            steps.value.withLock { $0 = 1 }
            try? limiter.beforeDownload()
            steps.value.withLock { $0 = 2 }
        }
        thread.start()
        #expect(waitUntil { steps.value.withLock { $0 } >= 1 }, "the first chunk is not held")
        #expect(waitUntil { limiter.waiting > 0 }, "the next one waits before it starts")
        #expect(steps.value.withLock { $0 } == 1)
        clock.monotonic.withLock { $0 += .seconds(62) }
        #expect(!waitUntil(timeout: 0.5) { steps.value.withLock { $0 } == 2 }, "the debt is not paid after 62 s")
        clock.monotonic.withLock { $0 += .seconds(2) }
        #expect(waitUntil { steps.value.withLock { $0 } == 2 })
        limiter.stop()
    }

    /// An upload waits before it is sent and is then counted without waiting: a full bucket lets
    /// a 4 MiB chunk go at once; the next one waits.
    @Test func anUploadWaitsBeforeItIsSentNeverAfter() {
        var configuration = BandwidthLimiter.Configuration()
        configuration.plain = BandwidthLimits(upload: rate("64K"))
        let clock = TestClock()
        let limiter = BandwidthLimiter(configuration, clock: clock.read)
        let steps = ThreadShared(0)
        let thread = Thread {
            try? limiter.beforeUpload(4 << 20)
            steps.value.withLock { $0 = 1 }
            try? limiter.beforeUpload(1)
            steps.value.withLock { $0 = 2 }
        }
        thread.start()
        #expect(waitUntil { steps.value.withLock { $0 } >= 1 })
        #expect(waitUntil { limiter.waiting > 0 })
        #expect(steps.value.withLock { $0 } == 1)
        clock.monotonic.withLock { $0 += .seconds(64) }
        #expect(waitUntil { steps.value.withLock { $0 } == 2 })
        limiter.stop()
    }

    /// A wait ends promptly (busy) once its caller's `cancelled` turns true — a download nobody
    /// wants any more — while other waits go on.
    @Test func aCancelledWaitReturnsPromptly() {
        var configuration = BandwidthLimiter.Configuration()
        configuration.plain = BandwidthLimits(download: rate("1K"))
        let limiter = BandwidthLimiter(configuration, clock: TestClock().read)
        limiter.afterDownload(100 << 20)
        let cancelled = ThreadShared(false)
        let outcome = ThreadShared<SyncFailure?>(nil)
        let thread = Thread {
            do throws(SyncFailure) {
                try limiter.beforeDownload(cancelled: { cancelled.value.withLock { $0 } })
            } catch {
                outcome.value.withLock { $0 = error }
            }
        }
        thread.start()
        #expect(waitUntil { limiter.waiting > 0 })
        let started = ContinuousClock.now
        cancelled.value.withLock { $0 = true }
        #expect(waitUntil { outcome.value.withLock { $0 } != nil })
        #expect(ContinuousClock.now - started < .seconds(5), "ended well before the debt is paid")
        #expect(outcome.value.withLock { $0 }?.isRetryable == true)
        limiter.stop()
    }
}

/// A value threads share (a `Mutex` cannot be captured by an escaping closure itself).
final class ThreadShared<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}
