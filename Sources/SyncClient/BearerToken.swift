import Synchronization

/// The bearer token an `HTTPContainer` sends, and where a new one comes from when the server
/// refuses it: `reload` (a mount reads its token file again), given the refused token, returns
/// the token to use instead, or nil when there is none (the refusal then stands).
///
/// Shared by every server of a mount, so one reload serves them all; reloads happen one at a
/// time, and a request refused with a token already replaced uses the replacement, without a
/// reload of its own.
public final class BearerToken: Sendable {
    private let current: Mutex<String>
    private let reload: (@Sendable (_ refused: String) -> String?)?

    public init(_ token: String, reload: (@Sendable (_ refused: String) -> String?)? = nil) {
        current = Mutex(token)
        self.reload = reload
    }

    /// The token to send now.
    public var value: String { current.withLock { $0 } }

    /// The server refused `refused`: the token to try instead, or nil.
    func replacement(forRefused refused: String) -> String? {
        current.withLock { token -> String? in
            if token != refused { return token }
            guard let fresh = reload?(refused), !fresh.isEmpty, fresh != refused else { return nil }
            token = fresh
            return fresh
        }
    }
}
