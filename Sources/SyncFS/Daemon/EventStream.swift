import Foundation
import Glibc

/// One `events` connection of the control socket, served on the connection's own thread: writes
/// what comes before the live events (`EventStreamOpening`: a replay, or a snapshot), then the
/// subscription's events as JSON lines, each with its `cursor`, until the client closes, stops
/// reading for longer than the socket's send timeout, falls too far behind (one `overflow` line,
/// then the end) or the daemon stops (`ChangeEvents.closeAll`).
enum EventStream {
    /// Serves the stream until it ends, then closes `client`.
    static func run(_ client: Int32, request: ControlRequest, fileSystem: SyncFileSystem) {
        defer { close(client) }
        let states: EventStreamOpening.StateFilter
        switch EventStreamOpening.StateFilter.parse(request.states) {
        case .success(let parsed): states = parsed
        case .failure(let refusal):
            if let answer = try? JSONEncoder().encode(ControlReply(error: refusal.message)) {
                _ = ControlServer.writeAll(client, Array(answer) + [10])
            }
            return
        }
        let filter = ChangeFilter(requestPath: request.path)
        // Subscribed before the answer goes out: everything after the `watching` line is seen.
        let opening = EventStreamOpening.open(request, filter: filter, states: states, fileSystem: fileSystem)
        let subscription = opening.subscription
        defer { subscription.cancel() }
        let watching: String
        switch filter {
        case .everything: watching = ""
        case .entry(let path): watching = path
        case .below(let folder): watching = folder + "/"
        }
        guard let answer = try? JSONEncoder().encode(ControlReply(watching: watching, cursor: opening.cursor)),
            ControlServer.writeAll(client, Array(answer) + [10])
        else { return }
        for chunk in opening.lines.chunks(ofBytes: 1 << 16) {
            guard ControlServer.writeAll(client, chunk) else { return }
        }
        let journal = fileSystem.changeEvents.journal
        serve(client, subscription) { event in
            guard states.admits(event, fileSystem: fileSystem) else { return nil }
            return event.jsonLine(cursor: event.sequence.flatMap { journal?.cursor($0) })
        }
    }

    /// Writes the subscription's events (as `line` makes them; nil: left out).
    private static func serve(
        _ client: Int32, _ subscription: ChangeSubscription, line: (ChangeEvent) -> [UInt8]?
    ) {
        var batch: [UInt8] = []
        while true {
            // Everything already queued goes out in one write.
            var next = subscription.next(timeout: 1)
            while case .event(let event) = next {
                if let bytes = line(event) { batch += bytes }
                if batch.count > 1 << 16 { break }
                next = subscription.next(timeout: 0)
            }
            if !batch.isEmpty {
                guard ControlServer.writeAll(client, batch) else { return }
                batch.removeAll(keepingCapacity: true)
            }
            switch next {
            case .event:
                continue
            case .overflow:
                _ = ControlServer.writeAll(client, ChangeEvent.overflow().jsonLine)
                return
            case .closed:
                return
            case .timedOut:
                if peerHungUp(client) { return }
            }
        }
    }

    /// True if the client closed its end (checked while idle, so a stream nobody reads ends).
    private static func peerHungUp(_ client: Int32) -> Bool {
        let readHangUp: Int16 = 0x2000  // POLLRDHUP (Linux), which Glibc's overlay lacks
        var descriptor = pollfd(fd: client, events: Int16(POLLIN) | readHangUp, revents: 0)
        guard poll(&descriptor, 1, 0) > 0 else { return false }
        return descriptor.revents & (readHangUp | Int16(POLLHUP) | Int16(POLLERR)) != 0
    }
}

extension [[UInt8]] {
    /// The lines joined into chunks of about `size` bytes (whole lines), for few writes.
    fileprivate func chunks(ofBytes size: Int) -> [[UInt8]] {
        var chunks: [[UInt8]] = []
        var current: [UInt8] = []
        for line in self {
            current += line
            if current.count >= size {
                chunks.append(current)
                current = []
            }
        }
        if !current.isEmpty { chunks.append(current) }
        return chunks
    }
}
