import NIOCore
import Synchronization

/// Every open connection of the server, for the caps of `ServerLimits`: at most
/// `connectionsPerAddress` from one client address, and at most `unauthenticatedConnections`
/// that have not (yet) made a request with a valid token. Shared by all connections'
/// `ConnectionGuard`s; thread-safe.
///
/// A connection over the unauthenticated cap makes room by closing the oldest *idle*
/// unauthenticated connection (one between requests, e.g. opened and left silent), or is itself
/// closed if every other one is in a request. A connection that has made one request with a valid
/// token is never closed for these caps: token holders keep getting answers however many idle
/// connections others open.
final class ConnectionBook: Sendable {
    struct Connection {
        let address: String
        let opened: ContinuousClock.Instant
        let channel: any Channel
        var authenticated = false
        var idle = true
    }

    enum Admission: Equatable {
        case admitted
        case refused(String)
    }

    let limits: ServerLimits
    private let state = Mutex<(next: Int, open: [Int: Connection])>((0, [:]))

    init(limits: ServerLimits) { self.limits = limits }

    /// Registers a new connection from `address` (an IP address; "" when unknown) and returns its
    /// ID, or why it must be closed at once. May close another, idle unauthenticated connection.
    func open(_ channel: any Channel, address: String) -> (id: Int, admission: Admission) {
        let (id, admission, evicted) = state.withLock { state -> (Int, Admission, (any Channel)?) in
            let id = state.next
            state.next += 1
            if !address.isEmpty,
                state.open.values.lazy.filter({ $0.address == address }).count >= limits.connectionsPerAddress
            {
                return (id, .refused("\(limits.connectionsPerAddress) connections from \(address) are open"), nil)
            }
            let unauthenticated = state.open.values.filter { !$0.authenticated }
            var evicted: (any Channel)?
            if unauthenticated.count >= limits.unauthenticatedConnections {
                let oldestIdle = state.open.filter { !$0.value.authenticated && $0.value.idle }
                    .min { $0.value.opened < $1.value.opened }
                guard let oldestIdle else {
                    return (id, .refused("\(unauthenticated.count) connections without a token are busy"), nil)
                }
                evicted = oldestIdle.value.channel
                state.open[oldestIdle.key] = nil
            }
            state.open[id] = Connection(address: address, opened: .now, channel: channel)
            return (id, .admitted, evicted)
        }
        evicted?.close(promise: nil)
        return (id, admission)
    }

    func close(_ id: Int) { state.withLock { _ = $0.open.removeValue(forKey: id) } }

    func authenticated(_ id: Int) { state.withLock { $0.open[id]?.authenticated = true } }

    /// Whether the connection is between requests (`idle`) or in one.
    func setIdle(_ id: Int, _ idle: Bool) { state.withLock { $0.open[id]?.idle = idle } }

    /// Open connections, and those of them without a valid token so far.
    var counts: (open: Int, unauthenticated: Int) {
        state.withLock { state in (state.open.count, state.open.values.filter { !$0.authenticated }.count) }
    }
}
