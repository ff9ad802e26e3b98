import Dispatch
import Foundation
import Testing

@testable import SyncFS

/// `Reachability`'s observers run outside its state's lock: an observer may wait on a thread that
/// reads `isOnline`. Called under the lock, the engine's observer (which takes `SyncRounds`' lock,
/// whose holder reads `isOnline`) made a lock-order inversion that Swift's `Mutex` turns into a
/// trap on Linux: a daemon died at an offline start.
@Suite struct ReachabilityTests {
    @Test func aReaderOfTheStateIsNotBlockedByARunningObserver() async {
        let reachability = Reachability()
        let inObserver = DispatchSemaphore(value: 0)
        let readerDone = DispatchSemaphore(value: 0)
        let observed = OutcomeBox()
        reachability.onChange { online, _ in
            inObserver.signal()
            // A thread reading `isOnline` must finish while this observer runs.
            observed.set(online: online, readerFinished: readerDone.wait(timeout: .now() + 5) == .success)
        }
        let reader = Thread {
            inObserver.wait()
            _ = reachability.isOnline
            _ = reachability.offlineSince
            readerDone.signal()
        }
        reader.start()
        await waiting { reachability.unreachable("away") }
        #expect(observed.value?.online == false)
        #expect(observed.value?.readerFinished == true, "isOnline waited for the observer")
        #expect(!reachability.isOnline)
    }

    @Test func changesReachTheObserversOnceEachInOrder() {
        let reachability = Reachability()
        let seen = LinesBox()
        reachability.onChange { online, reason in seen.add("online \(online) \(reason ?? "")") }
        reachability.onStorageChange { away, _ in seen.add("storage away \(away)") }
        reachability.answered()
        reachability.unreachable("first")
        reachability.unreachable("second")
        reachability.storageUnavailable("bucket")
        reachability.storageUnavailable("bucket again")
        reachability.answered()
        reachability.answered()
        #expect(
            seen.lines == [
                "online false first", "online true ", "storage away true", "storage away false",
            ])
    }

    final class OutcomeBox: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: (online: Bool, readerFinished: Bool)?
        func set(online: Bool, readerFinished: Bool) { lock.withLock { stored = (online, readerFinished) } }
        var value: (online: Bool, readerFinished: Bool)? { lock.withLock { stored } }
    }

    final class LinesBox: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [String] = []
        func add(_ line: String) { lock.withLock { stored.append(line) } }
        var lines: [String] { lock.withLock { stored } }
    }
}
