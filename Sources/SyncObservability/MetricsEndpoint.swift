import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus

/// The scrape listener: a small HTTP/1.1 server of its own (one event loop thread), apart from
/// the sync port, that answers `GET /metrics` with the registry in Prometheus text format
/// (version 0.0.4) and anything else with `404`. `beforeScrape` runs on its thread before each
/// rendering (the mount samples its status into gauges there).
public final class MetricsEndpoint: Sendable {
    /// The address bound (the real port when 0 was asked).
    public let bound: MetricsListenAddress
    private let channel: any Channel
    private let group: MultiThreadedEventLoopGroup

    private init(bound: MetricsListenAddress, channel: any Channel, group: MultiThreadedEventLoopGroup) {
        self.bound = bound
        self.channel = channel
        self.group = group
    }

    /// Binds `address` and serves until `stop`; throws what binding threw (address in use, not
    /// this machine's).
    public static func start(
        at address: MetricsListenAddress, registry: PrometheusCollectorRegistry,
        beforeScrape: @escaping @Sendable () -> Void = {}
    ) throws -> MetricsEndpoint {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 16)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(ScrapeHandler(registry: registry, beforeScrape: beforeScrape))
                }
            }
        do {
            let channel = try bootstrap.bind(host: address.host, port: address.port).wait()
            let port = channel.localAddress?.port ?? address.port
            return MetricsEndpoint(
                bound: MetricsListenAddress(host: address.host, port: port), channel: channel, group: group)
        } catch {
            group.shutdownGracefully { _ in }
            throw error
        }
    }

    /// Closes the listener and its thread (scrapes in progress are cut off).
    public func stop() {
        // Closing fails only if it is closed already; the group then has nothing left to stop.
        channel.close(promise: nil)
        group.shutdownGracefully { _ in }
    }

    /// The URL a scraper uses.
    public var url: String { "http://\(bound)/metrics" }
}

/// Answers one request at a time on a connection: the head is kept until its end arrives.
private final class ScrapeHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let registry: PrometheusCollectorRegistry
    private let beforeScrape: @Sendable () -> Void
    private var head: HTTPRequestHead?

    init(registry: PrometheusCollectorRegistry, beforeScrape: @escaping @Sendable () -> Void) {
        self.registry = registry
        self.beforeScrape = beforeScrape
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request): head = request
        case .body: break
        case .end:
            guard let request = head else { return }
            head = nil
            respond(to: request, context: context)
        }
    }

    private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.uri
        let status: HTTPResponseStatus
        let body: [UInt8]
        var headers = HTTPHeaders()
        if path != "/metrics" {
            status = .notFound
            body = Array("not found: the metrics are at /metrics\n".utf8)
            headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        } else if request.method != .GET && request.method != .HEAD {
            status = .methodNotAllowed
            body = Array("/metrics takes GET\n".utf8)
            headers.add(name: "Allow", value: "GET, HEAD")
        } else {
            beforeScrape()
            status = .ok
            body = registry.emitToBuffer()
            headers.add(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")
        }
        headers.add(name: "Content-Length", value: String(body.count))
        let keepAlive = request.isKeepAlive
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))),
            promise: nil)
        if request.method != .HEAD {
            context.write(
                wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        let done = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: done)
        if !keepAlive {
            let channel = context.channel
            done.futureResult.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
