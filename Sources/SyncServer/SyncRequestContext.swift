import Hummingbird
import NIOCore

/// Hummingbird's basic context and the peer's address (for the audit log and tokens' "last
/// used"); nil when the channel has none (a Unix socket).
struct SyncRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: String?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress?.ipAddress
    }
}
