import Glibc
import Testing

@testable import SyncFS

/// Which pending signals end a read waiting for a download (`InterruptingSignals`): the masks of
/// `/proc/TID/status`, blocked signals left out, stopping signals only.
@Suite struct InterruptingSignalsTests {
    private func status(pending: UInt64, shared: UInt64 = 0, blocked: UInt64 = 0) -> String {
        func hex(_ mask: UInt64) -> String {
            let digits = String(mask, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return "Name:\tpython3\nSigQ:\t0/63448\nSigPnd:\t\(hex(pending))\nShdPnd:\t\(hex(shared))\n"
            + "SigBlk:\t\(hex(blocked))\nSigIgn:\t0000000001001000\nSigCgt:\t0000000108000002\n"
    }

    private func bit(_ signal: Int32) -> UInt64 { UInt64(1) << UInt64(signal - 1) }

    @Test func pendingSignalsAreReadFromBothMasksLessTheBlockedOnes() throws {
        let text = status(pending: bit(SIGWINCH), shared: bit(SIGINT) | bit(SIGCHLD), blocked: bit(SIGCHLD))
        #expect(InterruptingSignals.pending(inStatus: text) == [SIGWINCH, SIGINT])
        #expect(InterruptingSignals.pending(inStatus: status(pending: 0)) == [])
        #expect(InterruptingSignals.pending(inStatus: "Name:\tx\n") == nil)
        #expect(InterruptingSignals.pending(inStatus: "SigPnd:\tzz\nShdPnd:\t0\nSigBlk:\t0\n") == nil)
        #expect(InterruptingSignals.pending(inStatus: status(pending: UInt64(1) << 63)) == [64])
    }

    @Test func onlySignalsThatAskToStopEndARead() {
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2, SIGPIPE, SIGKILL] {
            #expect(InterruptingSignals.stopping.contains(signal), "signal \(signal)")
        }
        for signal in [SIGCHLD, SIGWINCH, SIGURG, SIGCONT, SIGPROF, SIGIO, 34, 35] {
            #expect(!InterruptingSignals.stopping.contains(signal), "signal \(signal)")
        }
    }

    @Test func aThreadWhoseSignalsCannotBeReadHasItsInterruptHonoured() {
        #expect(InterruptingSignals.endsRead(ofThread: 0))
        #expect(!InterruptingSignals.stoppingSignalPending(forThread: 0))
        // This process has nothing pending.
        #expect(!InterruptingSignals.endsRead(ofThread: getpid()))
    }
}
