import Testing

@testable import SyncFS

/// The named delays are the values the engine used as nanosecond literals before they had names,
/// and the one conversion to the outbox's nanoseconds is exact and saturates.
@Suite struct EngineDelayTests {
    @Test func durationsConvertToWholeNanoseconds() {
        #expect(Duration.milliseconds(200).inNanoseconds == 200_000_000)
        #expect(Duration.seconds(300).inNanoseconds == 300_000_000_000)
        #expect(Duration.nanoseconds(7).inNanoseconds == 7)
        #expect(Duration.zero.inNanoseconds == 0)
        #expect(Duration.seconds(Int64.max).inNanoseconds == .max)
        #expect(Duration.seconds(Int64.min).inNanoseconds == .min)
    }

    @Test func theStandardUploadPolicyIsUnchanged() {
        let policy = UploadQueue.Policy.standard
        #expect(policy.quietDelay == 100_000_000)
        #expect(policy.initialBackoff == 1_000_000_000)
        #expect(policy.maximumBackoff == 300_000_000_000)
        #expect(policy.burstWindow == 100_000_000)
        #expect(policy.maximumBurstWait == 5_000_000_000)
        #expect(policy.burstChanges == 32)
        #expect(RepeatedFailureLog().interval == 300_000_000_000)
    }

    @Test func theEnginesWaitsAreUnchanged() {
        #expect(EngineDelay.uploaderBackstop.inNanoseconds == 60_000_000_000)
        #expect(EngineDelay.localEntryBusy.inNanoseconds == 200_000_000)
        #expect(EngineDelay.changedWhileUploading.inNanoseconds == 100_000_000)
        #expect(EngineDelay.otherUploadUnderway.inNanoseconds == 50_000_000)
        #expect(EngineDelay.waitingForOthers.inNanoseconds == 500_000_000)
        #expect(EngineDelay.remoteNotAppliedYet.inNanoseconds == 500_000_000)
        #expect(EngineDelay.mergeCommandGrace == .seconds(30))
        #expect(EngineDelay.deferredRetry == .milliseconds(500))
        #expect(EngineDelay.followerFailurePause == .seconds(1))
        #expect(EngineDelay.downloadFailurePause == .seconds(5))
        #expect(EngineDelay.pinnedPlaceholderScan == .seconds(30))
        #expect(EngineDelay.budgetCheckPause == .seconds(1))
    }
}
