import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes
import SyncBackend

/// One connection's watchman, in Hummingbird's HTTP/1 pipeline (an additional channel handler,
/// between the HTTP codec and the request handling), enforcing `ServerLimits`:
///
/// - the caps on connections per address and without a token (`ConnectionBook`): registered when
///   the connection opens, closed at once if refused;
/// - a connection that has made no request with a valid token is closed after
///   `unauthenticatedIdle` without a request (counting from its opening, or its last answer);
/// - a request must arrive whole within `requestDeadline` of its head, and its body must bring at
///   least `progressBytes` (or all that is left of it) in every `progressWindow`: otherwise the
///   answer is `408 requestTimeout` (unless an answer has begun) and the connection is closed.
///   So a body sent a kilobyte every few seconds ends within one window, and its upload slot and
///   budget with it.
///
/// It learns that a request's token was valid from the marker header `SyncResponder` sets on
/// the response (`SyncResponder.authenticatedMarker`), which it removes before the response is
/// encoded. Runs on the connection's event loop only.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let book: ConnectionBook
    private var limits: ServerLimits { book.limits }
    private var id: Int?
    private var authenticated = false

    /// The request being received (between its head and its end).
    private var receiving = false
    private var declaredLength: Int?
    private var received = 0
    private var receivedAtWindowStart = 0
    /// An answer to the current request has begun (its head went out) / has ended.
    private var answering = false
    private var requestsAnswered = 0
    private var requestsStarted = 0

    private var idleTimer: Scheduled<Void>?
    private var progressTimer: Scheduled<Void>?
    private var deadlineTimer: Scheduled<Void>?

    init(book: ConnectionBook) { self.book = book }

    // MARK: Opening and closing

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { register(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if id == nil { register(context) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTimers()
        if let id { book.close(id) }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopTimers()
        if let id { book.close(id) }
    }

    private func register(_ context: ChannelHandlerContext) {
        let address = context.channel.remoteAddress?.ipAddress ?? ""
        let (id, admission) = book.open(context.channel, address: address)
        self.id = id
        if case .refused = admission {
            book.close(id)
            context.close(promise: nil)
            return
        }
        startIdleTimer(context)
    }

    // MARK: Requests

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            idleTimer?.cancel()
            idleTimer = nil
            if let id { book.setIdle(id, false) }
            receiving = true
            requestsStarted += 1
            received = 0
            receivedAtWindowStart = 0
            declaredLength = request.headerFields[.contentLength].flatMap { Int($0) }
            startRequestTimers(context)
        case .body(let part):
            received += part.readableBytes
        case .end:
            receiving = false
            stopRequestTimers()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var response):
            answering = true
            if response.headerFields[SyncResponder.authenticatedMarker] != nil {
                response.headerFields[SyncResponder.authenticatedMarker] = nil
                if !authenticated, let id {
                    authenticated = true
                    book.authenticated(id)
                }
            }
            context.write(wrapOutboundOut(.head(response)), promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            answering = false
            requestsAnswered += 1
            context.write(data, promise: promise)
            if !receiving, requestsAnswered >= requestsStarted {
                if let id { book.setIdle(id, true) }
                startIdleTimer(context)
            }
        }
    }

    // MARK: Deadlines

    private func startIdleTimer(_ context: ChannelHandlerContext) {
        idleTimer?.cancel()
        idleTimer = nil
        guard !authenticated else { return }  // Hummingbird's idle timeout applies
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(in: limits.unauthenticatedIdle.timeAmount) {
            [self] in
            guard !authenticated, !receiving, requestsAnswered >= requestsStarted else { return }
            context.close(promise: nil)
        }
    }

    private func startRequestTimers(_ context: ChannelHandlerContext) {
        stopRequestTimers()
        let loop = context.eventLoop.assumeIsolated()
        deadlineTimer = loop.scheduleTask(in: limits.requestDeadline.timeAmount) { [self] in
            guard receiving else { return }
            timeOut(context, "the request did not arrive within \(limits.requestDeadline) of its head")
        }
        scheduleProgressCheck(context)
    }

    /// At the end of each window: the body must have brought `progressBytes`, or the rest of it.
    private func scheduleProgressCheck(_ context: ChannelHandlerContext) {
        progressTimer = context.eventLoop.assumeIsolated().scheduleTask(in: limits.progressWindow.timeAmount) {
            [self] in
            guard receiving else { return }
            let brought = received - receivedAtWindowStart
            let needed = min(limits.progressBytes, declaredLength.map { max(0, $0 - receivedAtWindowStart) } ?? .max)
            guard brought >= needed else {
                timeOut(
                    context,
                    "the request body arrived too slowly: \(brought) bytes in \(limits.progressWindow), at least "
                        + "\(limits.progressBytes) are needed")
                return
            }
            receivedAtWindowStart = received
            scheduleProgressCheck(context)
        }
    }

    private func stopRequestTimers() {
        progressTimer?.cancel()
        progressTimer = nil
        deadlineTimer?.cancel()
        deadlineTimer = nil
    }

    private func stopTimers() {
        stopRequestTimers()
        idleTimer?.cancel()
        idleTimer = nil
    }

    /// Answers `408` (unless an answer has begun) and closes the connection.
    private func timeOut(_ context: ChannelHandlerContext, _ message: String) {
        stopTimers()
        receiving = false
        guard !answering else {
            context.close(promise: nil)
            return
        }
        let body = (try? JSONEncoder().encode(WireError(.requestTimeout, message))) ?? Data()
        var head = HTTPResponse(status: .requestTimeout)
        head.headerFields[.contentType] = "application/json"
        head.headerFields[.contentLength] = String(body.count)
        head.headerFields[.connection] = "close"
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(bytes: body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
