import SyncBackend
import Synchronization

/// Transfers in progress and each entry's last transfer failure, for `status` and the
/// `user.syncfs.*` attributes. Written by downloads and the uploader, read by anyone.
public final class TransferBoard: Sendable {
    public enum Direction: String, Codable, Sendable {
        case download
        case upload
    }

    struct Transfer: Sendable {
        var direction: Direction
        var done: Int64
        var total: Int64
    }

    private struct State {
        var active: [FileID: Transfer] = [:]
        var errors: [FileID: String] = [:]
    }

    private let state = Mutex(State())

    init() {}

    func started(_ id: FileID, direction: Direction, total: Int64) {
        state.withLock { $0.active[id] = Transfer(direction: direction, done: 0, total: total) }
    }

    func progressed(_ id: FileID, done: Int64) {
        state.withLock { $0.active[id]?.done = done }
    }

    /// Ended well: also forgets an earlier failure.
    func finished(_ id: FileID) {
        state.withLock {
            $0.active[id] = nil
            $0.errors[id] = nil
        }
    }

    /// Ended without completing (the failure, if any, was recorded with `failed`).
    func ended(_ id: FileID) { state.withLock { $0.active[id] = nil } }

    /// Ended with an error (also ends the transfer, so the state reads `error` at once).
    func failed(_ id: FileID, _ message: String) {
        state.withLock {
            $0.errors[id] = message
            $0.active[id] = nil
        }
    }

    func transfer(_ id: FileID) -> Transfer? { state.withLock { $0.active[id] } }

    func error(_ id: FileID) -> String? { state.withLock { $0.errors[id] } }

    var active: [(FileID, Transfer)] { state.withLock { $0.active.map { ($0.key, $0.value) } } }

    /// Every entry the board names: transferring now or with a failure kept.
    var namedIDs: Set<FileID> { state.withLock { Set($0.active.keys).union($0.errors.keys) } }
}
