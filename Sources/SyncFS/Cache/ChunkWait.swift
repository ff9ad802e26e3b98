import Glibc
import Synchronization

/// One reader's wait for a byte range of a file being downloaded (`Hydration.wait`), without a
/// thread: whoever waits says what to do once it ends (`onEnd`), and the download, a cancel or an
/// interrupt ends it (`end`). So a FUSE worker thread hands a read to the download and goes back
/// to serving requests instead of blocking until the chunks arrive from a server that may never
/// answer.
///
/// Contract: it ends exactly once — the first `end` wins and later ones return false — and the
/// action given to `onEnd` runs exactly once, with that outcome (nil: the bytes are in the cache
/// file; else the error for the reader), on the thread that ended it or, if it had ended already,
/// at once on the caller's. The action never runs under the download's lock (it replies to the
/// kernel).
final class ChunkWait: Sendable {
    /// The chunks waited for (indices into the download's manifest).
    let chunks: Range<Int>

    private enum Phase {
        case waiting(action: (@Sendable (FSError?) -> Void)?)
        case ended(FSError?)
        case delivered
    }

    private let phase = Mutex<Phase>(.waiting(action: nil))
    /// The wait this one stands for (`standFor`), ended with it.
    private let standsFor = Mutex<ChunkWait?>(nil)

    init(chunks: Range<Int>) { self.chunks = chunks }

    /// Sets what runs when the wait ends; runs it now if it has ended already. Call once.
    func onEnd(_ action: @escaping @Sendable (FSError?) -> Void) {
        let outcome = phase.withLock { phase -> FSError?? in
            switch phase {
            case .waiting:
                phase = .waiting(action: action)
                return nil
            case .ended(let outcome):
                phase = .delivered
                return .some(outcome)
            case .delivered:
                return nil
            }
        }
        if let outcome { action(outcome) }
    }

    /// Ends the wait with `outcome` (nil: the bytes are there). False if it had ended already.
    @discardableResult
    func end(_ outcome: FSError?) -> Bool {
        let decided = phase.withLock { phase -> (ended: Bool, action: (@Sendable (FSError?) -> Void)?) in
            switch phase {
            case .waiting(let action?):
                phase = .delivered
                return (true, action)
            case .waiting(nil):
                phase = .ended(outcome)
                return (true, nil)
            case .ended, .delivered:
                return (false, nil)
            }
        }
        decided.action?(outcome)
        if decided.ended, let other = standsFor.withLock({ $0 }) { other.end(outcome) }
        return decided.ended
    }

    /// Makes this wait stand for `other` — a reader's answer for the wait of the download now
    /// under way, which changes when a cancelled download is replaced
    /// (`ReadPath.prepareRead`): when this one ends (an interrupt, the session's end),
    /// `other` ends too, so the download no longer counts the reader as waiting
    /// (`Hydration.isWanted`). If this one has ended already, `other` ends at once (EINTR: the
    /// reader was answered).
    func standFor(_ other: ChunkWait) {
        standsFor.withLock { $0 = other }
        if hasEnded { other.end(.io(EINTR)) }
    }

    /// True once it has ended (the reader was answered or will be).
    var hasEnded: Bool {
        phase.withLock { phase in
            if case .waiting = phase { return false }
            return true
        }
    }
}
