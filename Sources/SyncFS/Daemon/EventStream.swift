import Foundation
import Glibc

/// One `events` connection of the control socket, served on the connection's own thread: writes
/// the subscription's events as JSON lines until the client closes, stops reading for longer than
/// the socket's send timeout, falls too far behind (one `overflow` line, then the end) or the
/// daemon stops (`ChangeEvents.closeAll`).
enum EventStream {
    /// Serves the stream until it ends, then closes `client`.
    static func run(_ client: Int32, request: ControlRequest, events: ChangeEvents) {
        let filter = ChangeFilter(requestPath: request.path)
        // Subscribed before the answer goes out: everything after the `watching` line is seen.
        let subscription = events.subscribe(filter)
        defer {
            subscription.cancel()
            close(client)
        }
        let watching: String
        switch filter {
        case .everything: watching = ""
        case .entry(let path): watching = path
        case .below(let folder): watching = folder + "/"
        }
        guard let answer = try? JSONEncoder().encode(ControlReply(watching: watching)),
            ControlServer.writeAll(client, Array(answer) + [10])
        else { return }
        serve(client, subscription)
    }

    private static func serve(_ client: Int32, _ subscription: ChangeSubscription) {
        var batch: [UInt8] = []
        while true {
            // Everything already queued goes out in one write.
            var next = subscription.next(timeout: 1)
            while case .event(let event) = next {
                batch += event.jsonLine
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
