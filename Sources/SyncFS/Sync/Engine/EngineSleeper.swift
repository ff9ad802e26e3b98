import SyncBackend

/// How the engine's threads pause between attempts (`EngineRun.pause`): on real time in
/// production (`StopSignal`); a test gives the engine a sleeper on a clock it moves by hand, so a
/// pause ends when the test says, not after real time.
///
/// Contract: `sleep(for:)` returns once `duration` has passed on the sleeper's clock, or at once
/// when `stop()` is (or was) called, and says whether it still runs (false once stopped).
/// `stop()` is final, ends every sleep in progress and to come, and is true the first time.
protocol EngineSleeper: AnyObject, Sendable {
    @discardableResult func sleep(for duration: Duration) -> Bool
    @discardableResult func stop() -> Bool
}

extension StopSignal: EngineSleeper {}
