import Glibc
import Synchronization

/// A local container that may be away: the container a mount has used before, at a path where it
/// is not always reachable (an unplugged disk, a network share not mounted yet, a directory moved
/// aside). It opens the `LocalContainer` at `path` when it can and forwards every call to it.
///
/// The contract, beyond `Container`'s:
/// - **Never creates anything.** A missing directory, an empty one (the mount point of a disk
///   that is not plugged in), one without a container marker or whose container cannot be opened
///   is *unreachable*: every call fails at once with `unavailable` (retryable: it says nothing
///   about the data), whose message names the path and the reason.
/// - **Re-tries at most every `retryInterval`** (2 s by default): the first call after the
///   interval looks at the path again (and opens the container if it is back); calls in between
///   fail fast with the last reason. While connected, the same look (the directory's identity
///   and the marker's ID) runs every interval, and an `unavailable` answer from the container
///   makes the next call look at once; a container that went away is dropped and reopened
///   afresh when it is back (a copy put back in its place too: the old database connection
///   would write elsewhere). Calls made between a swap of the directory and the next look still
///   go to the open container, whose own checks (its marker on every call) catch a directory
///   that is gone.
/// - **Only the expected container is used.** A container with another ID at the path is never
///   opened (nor upgraded, nor written): calls fail with `unavailable` naming both IDs, and
///   `onEvent` reports it once (per ID found). So is a container of a newer format.
/// - `waitForChanges` while unreachable waits until the next look is due (never beyond its
///   timeout; cancellation ends it, returning false) instead of failing at once, so a follower
///   looping on it does not spin; if the container is still away then, it throws `unavailable`.
/// - `containerID` is always the expected ID, reachable or not.
public final class ReconnectingContainer: Container {
    /// A change of reachability, for the owner's log. Each is reported once per change.
    public enum Event: Sendable, Equatable {
        /// The container can be used again after being unreachable or refused.
        case reconnected
        /// The container cannot be reached (the message names the path and the reason).
        case unreachable(String)
        /// The path holds a container this one must not use (another ID, a newer format).
        case refused(String)
    }

    /// What a look at the path found. Every case but `connected` is looked at again later.
    public enum Reachability: Sendable, Equatable {
        case connected
        /// Away for now (the message names the path and the reason).
        case unreachable(String)
        /// Another container, with the ID given, is at the path: never used.
        case otherContainer(id: String, message: String)
        /// The container was upgraded by a newer SyncFS: never used by this one.
        case unsupportedFormat(String)

        /// Why the container cannot be used (nil when connected).
        public var message: String? {
            switch self {
            case .connected: return nil
            case .unreachable(let message), .otherContainer(_, let message), .unsupportedFormat(let message):
                return message
            }
        }
    }

    public let path: String
    /// The ID of the container this one stands for (the one the mount recorded).
    public let expectedID: String
    public var containerID: String { expectedID }
    public let retryInterval: Duration

    private let layout: LocalLayout
    private let onEvent: @Sendable (Event) -> Void
    private let state: Mutex<State>

    /// The open container and the directory it was opened in (a directory put back in its place,
    /// a restored copy, is opened afresh: the old database connection would write elsewhere).
    private struct Opened: Sendable {
        let container: LocalContainer
        let device: UInt64
        let inode: UInt64
    }

    private struct State {
        var opened: Opened?
        var reachability: Reachability
        /// When the path was last looked at; nil: look at the next call.
        var lookedAt: ContinuousClock.Instant?
        /// A look is running (other calls use what is known meanwhile).
        var looking = false
        /// The last event reported (so each change is reported once).
        var reported: Event?
    }

    /// Nothing is opened here: the first call (or `connectNow`) looks at the path.
    public init(
        path: String, expectedID: String, retryInterval: Duration = .seconds(2),
        onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.path = path
        self.expectedID = expectedID
        self.retryInterval = retryInterval
        self.onEvent = onEvent
        layout = LocalLayout(root: path)
        state = Mutex(
            State(reachability: .unreachable("the container at \(path) has not been opened yet")))
    }

    /// Looks at the path now (blocking), whatever the retry interval, and opens the container if
    /// it is there. Reports no event for this look (the caller says what it found); later changes
    /// are reported as usual. For the mount's start.
    public func connectNow() -> Reachability {
        let current = state.withLock { $0.opened }
        let (opened, reachability) = look(keeping: current)
        state.withLock { state in
            state.opened = opened
            state.reachability = reachability
            state.lookedAt = .now
            state.reported = Self.event(for: reachability, after: nil)
        }
        return reachability
    }

    /// What the last look found.
    public var reachability: Reachability { state.withLock { $0.reachability } }

    // MARK: Container

    public func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        try await forward { (container) async throws(ContainerProtocolError) in
            try await container.missingChunks(hashes)
        }
    }

    public func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try await forward { (container) async throws(ContainerProtocolError) in try await container.putChunk(chunk) }
    }

    public func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        try await forward { (container) async throws(ContainerProtocolError) in try await container.chunk(hash) }
    }

    public func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        try await forward { (container) async throws(ContainerProtocolError) in try await container.entry(id) }
    }

    public func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        try await forward { (container) async throws(ContainerProtocolError) in try await container.commit(request) }
    }

    public func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try await forward { (container) async throws(ContainerProtocolError) in
            try await container.commit(batch: requests)
        }
    }

    public func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError)
        -> AllOrNothingOutcome
    {
        try await forward { (container) async throws(ContainerProtocolError) in
            try await container.commit(allOrNothing: requests)
        }
    }

    public func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try await forward { (container) async throws(ContainerProtocolError) in try await container.putChunks(chunks) }
    }

    public func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        try await forward { (container) async throws(ContainerProtocolError) in
            try await container.changes(after: cursor, limit: limit)
        }
    }

    public func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError)
        -> Bool
    {
        let deadline = ChangeNotifier.deadline(after: timeout)
        let container: LocalContainer
        do throws(ContainerProtocolError) {
            container = try await current()
        } catch {
            // Away: wait for the next look rather than fail at once (a caller looping on this
            // would spin), but never past the timeout.
            let nextLook = state.withLock { state in (state.lookedAt ?? .now) + retryInterval }
            let pause = min(nextLook, deadline) - .now
            if pause > .zero {
                do { try await Task.sleep(for: pause) } catch { return false }
            }
            if Task.isCancelled { return false }
            container = try await current()
        }
        return try await forward(to: container) { (container) async throws(ContainerProtocolError) in
            try await container.waitForChanges(after: cursor, timeout: max(.zero, deadline - .now))
        }
    }

    // MARK: Connecting

    /// Runs `body` on the container, or fails with why it cannot be reached.
    func forward<T: Sendable>(
        _ body: (LocalContainer) async throws(ContainerProtocolError) -> T
    ) async throws(ContainerProtocolError) -> T {
        try await forward(to: try await current(), body)
    }

    private func forward<T: Sendable>(
        to container: LocalContainer, _ body: (LocalContainer) async throws(ContainerProtocolError) -> T
    ) async throws(ContainerProtocolError) -> T {
        do throws(ContainerProtocolError) {
            return try await body(container)
        } catch {
            if case .unavailable = error {
                // Perhaps the directory went away (or was replaced): look again at the next call.
                state.withLock { state in
                    if state.opened?.container === container { state.lookedAt = nil }
                }
            }
            throw error
        }
    }

    /// The open container, looking at the path first if a look is due; else the reason it
    /// cannot be used.
    private func current() async throws(ContainerProtocolError) -> LocalContainer {
        let now = ContinuousClock.now
        enum Decision {
            case use(LocalContainer)
            case fail(ContainerProtocolError)
            case look(Opened?)
        }
        let decision = state.withLock { state -> Decision in
            let due = state.lookedAt.map { now >= $0 + retryInterval } ?? true
            if !due || state.looking {
                if let opened = state.opened { return .use(opened.container) }
                return .fail(Self.error(for: state.reachability))
            }
            state.looking = true
            return .look(state.opened)
        }
        let kept: Opened?
        switch decision {
        case .use(let container): return container
        case .fail(let error): throw error
        case .look(let opened): kept = opened
        }
        let found: (Opened?, Reachability)
        do throws(ContainerProtocolError) {
            found = try await LocalFileIO.offload { [self] () throws(ContainerProtocolError) in look(keeping: kept) }
        } catch {
            found = (nil, .unreachable(error.description))
        }
        let (opened, reachability) = found
        let event = state.withLock { state -> Event? in
            state.opened = opened
            state.reachability = reachability
            state.lookedAt = .now
            state.looking = false
            let event = Self.event(for: reachability, after: state.reported)
            if let event { state.reported = event }
            return event
        }
        if let event { onEvent(event) }
        guard let opened else { throw Self.error(for: reachability) }
        return opened.container
    }

    /// Looks at the path (blocking): keeps `current` if the expected container is still there,
    /// opens it if it is back, and never opens another one.
    private func look(keeping current: Opened?) -> (Opened?, Reachability) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let reason = errno == ENOENT ? "the directory does not exist" : LocalFileIO.errorText(errno)
            return (nil, unreachable(reason))
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { return (nil, unreachable("it is not a directory")) }
        guard access(layout.markerPath, F_OK) == 0 else {
            return (nil, unreachable("the directory holds no container (\(LocalLayout.markerName) is missing)"))
        }
        let marker: (format: Int, id: String)
        do throws(ContainerOpenError) {
            marker = try LocalContainer.readMarker(layout)
        } catch {
            return (nil, unreachable(error.description))
        }
        guard marker.id == expectedID else { return (nil, foreign(marker.id)) }
        let device = UInt64(info.st_dev)
        let inode = UInt64(info.st_ino)
        if let current, current.device == device, current.inode == inode { return (current, .connected) }
        do throws(ContainerOpenError) {
            let container = try LocalContainer.open(layout)
            // The marker could have been replaced between the two reads.
            guard container.id == expectedID else { return (nil, foreign(container.id)) }
            return (Opened(container: container, device: device, inode: inode), .connected)
        } catch {
            if case .unsupportedFormat(let reason) = error { return (nil, .unsupportedFormat(reason)) }
            return (nil, unreachable(error.description))
        }
    }

    private func unreachable(_ reason: String) -> Reachability {
        .unreachable("the container at \(path) is not reachable: \(reason)")
    }

    private func foreign(_ found: String) -> Reachability {
        .otherContainer(
            id: found,
            message: "\(path) holds another container (\(found)), not this mount's (\(expectedID)); it is not "
                + "used until this mount's container is back at that path")
    }

    private static func error(for reachability: Reachability) -> ContainerProtocolError {
        .unavailable(reachability.message ?? "the container is reconnecting")
    }

    /// The event to report for `reachability`, if it differs from the last one reported.
    private static func event(for reachability: Reachability, after reported: Event?) -> Event? {
        let event: Event
        switch reachability {
        case .connected:
            // A first connection is not news; coming back is.
            guard reported != nil, reported != .reconnected else { return nil }
            event = .reconnected
        case .unreachable(let message): event = .unreachable(message)
        case .otherContainer(_, let message), .unsupportedFormat(let message): event = .refused(message)
        }
        return event == reported ? nil : event
    }
}
