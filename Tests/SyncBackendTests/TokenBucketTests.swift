import Testing

@testable import SyncBackend

/// `TokenBucket` on a clock the test moves: the rate, the burst, a debt larger than the burst,
/// and a change of rate while a debt is being waited out — no sleeping.
@Suite struct TokenBucketTests {
    let mebibyte: Int64 = 1 << 20

    @Test func aFullBucketLetsTheBurstGoAtOnceThenTheRateHolds() {
        var bucket = TokenBucket(rate: 2 * mebibyte, now: .zero)
        #expect(bucket.burst == 2 * mebibyte)
        bucket.take(2 * mebibyte, now: .zero)
        #expect(bucket.delay(now: .zero) == .zero)
        bucket.take(mebibyte, now: .zero)
        #expect(abs((bucket.delay(now: .zero) - .milliseconds(500)).inSeconds) < 0.001)
        // Half a second later the debt is paid.
        #expect(bucket.delay(now: .milliseconds(500)) <= .microseconds(1))
    }

    @Test func aChunkLargerThanTheBurstGoesAndLeavesADebt() {
        var bucket = TokenBucket(rate: 64 * 1024, now: .zero)
        bucket.take(4 * mebibyte, now: .zero)  // 64 bursts at once
        let delay = bucket.delay(now: .zero)
        #expect(abs(delay.inSeconds - 63) < 0.01, "\(delay)")
        #expect(abs(bucket.delay(now: .seconds(60)).inSeconds - 3) < 0.01)
        #expect(bucket.delay(now: .seconds(64)) == .zero)
    }

    /// `admits`: the bucket must hold the bytes, or be full for a chunk larger than the burst, so
    /// its debt is never more than one chunk's.
    @Test func admittingNeedsTheBytesOrAFullBucket() {
        var bucket = TokenBucket(rate: 64 * 1024, now: .zero)
        #expect(bucket.admits(4 * mebibyte, now: .zero), "a full bucket lets a large chunk go")
        bucket.take(32 * 1024, now: .zero)
        #expect(!bucket.admits(4 * mebibyte, now: .zero), "not full")
        #expect(bucket.admits(32 * 1024, now: .zero))
        #expect(!bucket.admits(32 * 1024 + 1, now: .zero))
        #expect(abs(bucket.delay(admitting: 64 * 1024, now: .zero).inSeconds - 0.5) < 0.001)
        #expect(bucket.admits(0, now: .zero), "no debt")
        bucket.take(64 * 1024, now: .zero)
        #expect(!bucket.admits(0, now: .zero), "in debt")
        #expect(TokenBucket(rate: nil, now: .zero).admits(1 << 40, now: .zero), "no limit")
    }

    @Test func aQuietSpellRefillsOnlyUpToTheBurst() {
        var bucket = TokenBucket(rate: mebibyte, now: .zero)
        bucket.take(mebibyte, now: .zero)
        // An hour of nothing: still one second's worth, not 3600.
        bucket.take(2 * mebibyte, now: .seconds(3600))
        #expect(abs(bucket.delay(now: .seconds(3600)).inSeconds - 1) < 0.001)
    }

    @Test func sustainedRateIsTheRate() {
        // 50 MiB in 256 KiB pieces at 2 MiB/s, each sent once its debt is paid: 48 MiB after the
        // 2 MiB burst, 24 s.
        var bucket = TokenBucket(rate: 2 * mebibyte, now: .zero)
        var now = Duration.zero
        for _ in 0..<200 {
            bucket.take(256 * 1024, now: now)
            now += bucket.delay(now: now)
        }
        #expect(abs(now.inSeconds - 24) < 0.01, "\(now)")
    }

    @Test func aNewRateWhileWaitingPaysTheDebtAtTheNewRate() {
        var bucket = TokenBucket(rate: mebibyte, now: .zero)
        bucket.take(3 * mebibyte, now: .zero)  // 2 MiB of debt: 2 s at 1 MiB/s
        #expect(abs(bucket.delay(now: .zero).inSeconds - 2) < 0.001)
        // After 1 s (1 MiB paid) the rate doubles: the last MiB takes half a second.
        bucket.setRate(2 * mebibyte, now: .seconds(1))
        #expect(abs(bucket.delay(now: .seconds(1)).inSeconds - 0.5) < 0.001)
        // Slower instead: the same MiB would take 4 s at 256 KiB/s.
        var slower = TokenBucket(rate: mebibyte, now: .zero)
        slower.take(3 * mebibyte, now: .zero)
        slower.setRate(256 * 1024, now: .seconds(1))
        #expect(abs(slower.delay(now: .seconds(1)).inSeconds - 4) < 0.001)
    }

    @Test func noLimitForgivesTheDebtAndALimitAfterNoneStartsFull() {
        var bucket = TokenBucket(rate: mebibyte, now: .zero)
        bucket.take(10 * mebibyte, now: .zero)
        bucket.setRate(nil, now: .seconds(1))
        #expect(bucket.delay(now: .seconds(1)) == .zero)
        bucket.take(100 * mebibyte, now: .seconds(1))
        #expect(bucket.delay(now: .seconds(1)) == .zero)
        bucket.setRate(mebibyte, now: .seconds(2))
        bucket.take(mebibyte, now: .seconds(2))
        #expect(bucket.delay(now: .seconds(2)) == .zero)
    }

    @Test func aTinyRateStillHasAUsableBurstAndAClockGoingBackIsIgnored() {
        var bucket = TokenBucket(rate: 1, now: .seconds(10))
        #expect(bucket.burst == TokenBucket.minimumBurst)
        bucket.take(TokenBucket.minimumBurst + 1, now: .seconds(10))
        #expect(abs(bucket.delay(now: .seconds(10)).inSeconds - 1) < 0.001)
        // An earlier time than the last one seen refills nothing (and does not crash).
        bucket.take(0, now: .seconds(5))
        #expect(abs(bucket.delay(now: .seconds(10)).inSeconds - 1) < 0.001)
    }
}
