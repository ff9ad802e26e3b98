import Synchronization
import Testing

@testable import SyncFS

/// `AfterReply`: work put off by a request's handling runs once the handling (and its answer) is
/// done, on the same thread; outside a handling it runs at once.
struct AfterReplyTests {
    @Test func workOutsideAHandlingRunsAtOnce() {
        let ran = Mutex(false)
        AfterReply.run { ran.withLock { $0 = true } }
        #expect(ran.withLock { $0 })
    }

    @Test func workInsideAHandlingRunsAfterIt() {
        let order = Mutex<[String]>([])
        let result = AfterReply.handling { () -> Int in
            AfterReply.run { order.withLock { $0.append("first") } }
            AfterReply.handling {
                AfterReply.run { order.withLock { $0.append("nested") } }
            }
            order.withLock { $0.append("answer") }
            return 7
        }
        #expect(result == 7)
        #expect(order.withLock { $0 } == ["answer", "first", "nested"], "put off until the outermost handling ends")
        AfterReply.run { order.withLock { $0.append("after") } }
        #expect(order.withLock { $0 }.last == "after", "the thread is outside a handling again")
    }

    @Test func aHandlingThatThrowsStillRunsWhatItPutOff() {
        struct Refused: Error {}
        let ran = Mutex(false)
        #expect(throws: Refused.self) {
            try AfterReply.handling { () throws(Refused) in
                AfterReply.run { ran.withLock { $0 = true } }
                throw Refused()
            }
        }
        #expect(ran.withLock { $0 })
    }
}
