import SyncBackend

/// The endpoints of the protocol: exactly the rows of doc/PROTOCOL.md's endpoint table, and the
/// server's only routing table (`Tests/SyncServerTests/ProtocolDocumentTests.swift` compares the
/// two).
///
/// A path template is matched segment by segment: `NAME`, `HASH`, `ID`, `USER`, `LINK` and
/// `SECRET` match any one
/// non-empty segment (validated later, so a malformed one is `400`, not `404`); other segments
/// match literally. Paths are never percent-decoded: an encoded byte makes a segment invalid.
public enum Endpoint: String, CaseIterable, Sendable {
    case health
    case login
    case containerInfo
    case missingChunks
    case putChunk
    case getChunk
    case entry
    case commit
    case commitBatch
    case commitAllOrNothing
    case chunkBatch
    case changes
    case wait
    case history
    case trash
    case digest
    case lock
    case unlock
    case renewLocks
    case releaseLocks
    case entryLocks
    case members
    case setMember
    case removeMember
    case containerLinks
    case createLink
    case revokeLink
    case containerAudit
    case retention
    case setRetention
    case linkInfo
    case linkList
    case linkContent
    case linkUpload

    /// The least role a token needs in the container (`AccessRole`): reading needs a viewer's,
    /// changing content (chunks, commits, locks) an editor's.
    public var requiredRole: AccessRole {
        switch self {
        case .health, .login, .containerInfo, .getChunk, .entry, .changes, .wait, .history, .trash, .digest,
            .entryLocks, .retention:
            return .viewer
        case .missingChunks, .putChunk, .commit, .commitBatch, .commitAllOrNothing, .chunkBatch, .lock, .unlock,
            .renewLocks, .releaseLocks:
            return .editor
        case .members, .setMember, .removeMember, .containerLinks, .createLink, .revokeLink, .containerAudit,
            .setRetention:
            return .admin
        case .linkInfo, .linkList, .linkContent, .linkUpload:
            // Opened by the link's secret, not a token (`needsToken`).
            return .viewer
        }
    }

    /// The HTTP method.
    public var method: String {
        switch self {
        case .health, .containerInfo, .getChunk, .entry, .changes, .wait, .history, .trash, .digest, .entryLocks,
            .members, .containerLinks, .containerAudit, .linkInfo, .linkList, .linkContent, .retention:
            return "GET"
        case .login, .missingChunks, .commit, .commitBatch, .commitAllOrNothing, .chunkBatch, .lock, .unlock,
            .renewLocks, .releaseLocks, .setMember, .createLink, .revokeLink, .linkUpload:
            return "POST"
        case .putChunk, .setRetention: return "PUT"
        case .removeMember: return "DELETE"
        }
    }

    /// The path as doc/PROTOCOL.md writes it (without the query).
    public var pathTemplate: String {
        let container = "/v1/containers/NAME"
        switch self {
        case .health: return "/v1/health"
        case .login: return "/v1/login"
        case .containerInfo: return container
        case .missingChunks: return container + "/chunks/missing"
        case .putChunk, .getChunk: return container + "/chunks/HASH"
        case .entry: return container + "/entries/ID"
        case .commit: return container + "/commits"
        case .commitBatch: return container + "/commits/batch"
        case .commitAllOrNothing: return container + "/commits/all-or-nothing"
        case .chunkBatch: return container + "/chunks/batch"
        case .changes: return container + "/changes"
        case .wait: return container + "/changes/wait"
        case .history: return container + "/entries/ID/versions"
        case .trash: return container + "/trash"
        case .digest: return container + "/digest"
        case .lock: return container + "/locks"
        case .unlock: return container + "/locks/unlock"
        case .renewLocks: return container + "/locks/renew"
        case .releaseLocks: return container + "/locks/release"
        case .entryLocks: return container + "/entries/ID/locks"
        case .members, .setMember: return container + "/members"
        case .removeMember: return container + "/members/USER"
        case .containerLinks, .createLink: return container + "/links"
        case .revokeLink: return container + "/links/LINK/revoke"
        case .containerAudit: return container + "/audit"
        case .retention, .setRetention: return container + "/retention"
        case .linkInfo: return "/v1/links/SECRET"
        case .linkList: return "/v1/links/SECRET/list"
        case .linkContent: return "/v1/links/SECRET/content"
        case .linkUpload: return "/v1/links/SECRET/upload"
        }
    }

    /// The query parameters the endpoint takes; any other is `400 invalidRequest`.
    var queryParameters: Set<String> {
        switch self {
        case .changes: return [WireProtocol.Query.after, WireProtocol.Query.limit]
        case .wait: return [WireProtocol.Query.after, WireProtocol.Query.timeout]
        case .history: return [WireProtocol.Query.limit]
        case .trash: return [WireProtocol.Query.before, WireProtocol.Query.limit]
        case .containerAudit: return [WireProtocol.Query.since, WireProtocol.Query.limit]
        case .linkList: return [WireProtocol.Query.path, WireProtocol.Query.after, WireProtocol.Query.limit]
        case .linkContent: return [WireProtocol.Query.path]
        case .linkUpload: return [WireProtocol.Query.name]
        case .health, .login, .containerInfo, .missingChunks, .putChunk, .getChunk, .entry, .commit, .commitBatch,
            .commitAllOrNothing, .chunkBatch, .digest, .lock, .unlock, .renewLocks, .releaseLocks, .entryLocks,
            .members, .setMember,
            .removeMember, .containerLinks, .createLink, .revokeLink, .linkInfo, .retention, .setRetention:
            return []
        }
    }

    /// The largest body the endpoint reads (nil: it reads none).
    var largestBody: Int? {
        switch self {
        case .putChunk: return WireProtocol.maxChunkBodyBytes
        case .chunkBatch: return WireProtocol.maxChunkBatchBodyBytes
        case .missingChunks, .commit, .commitBatch, .commitAllOrNothing: return WireProtocol.maxJSONBodyBytes
        case .lock, .unlock, .renewLocks, .releaseLocks: return WireProtocol.maxLockBodyBytes
        case .login: return WireProtocol.maxLoginBodyBytes
        case .setMember, .createLink, .setRetention: return WireProtocol.maxLoginBodyBytes
        // Read as it arrives, in the link's own share (`SyncResponder+LinkUpload`), not here.
        case .linkUpload: return nil
        case .health, .containerInfo, .getChunk, .entry, .changes, .wait, .history, .trash, .digest, .entryLocks,
            .members, .removeMember, .containerLinks, .revokeLink, .containerAudit, .linkInfo, .linkList, .linkContent,
            .retention:
            return nil
        }
    }

    /// The endpoints a share link's secret opens (`SyncResponder+Links`), without a token.
    var isLink: Bool { self == .linkInfo || self == .linkList || self == .linkContent || self == .linkUpload }

    /// Every endpoint but the health check, login and the link endpoints needs a token.
    var needsToken: Bool { self != .health && self != .login && !isLink }

    /// Chunk uploads take one of the upload slots (`BodyBudget`), a batch of chunks one too.
    var isChunkUpload: Bool { self == .putChunk || self == .chunkBatch }

    /// The batch endpoints (`WireProtocol.Feature`): a server older than them has none.
    var isBatch: Bool { self == .commitBatch || self == .commitAllOrNothing || self == .chunkBatch }
}

/// Where a request path leads: one endpoint with the placeholders it filled, a known path with
/// another method, or nothing.
enum RouteResolution: Equatable {
    case endpoint(Endpoint, [String: String])
    /// The path is known; these methods are allowed on it.
    case methodNotAllowed([String])
    case notFound

    /// `endpoints`: those served (all but in tests that play an older server).
    static func resolve(method: String, path: String, endpoints: [Endpoint] = Endpoint.allCases) -> RouteResolution {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        var allowed: [String] = []
        var best: (endpoint: Endpoint, captures: [String: String], literals: Int)?
        for endpoint in endpoints {
            guard let (captures, literals) = match(segments, endpoint.pathTemplate) else { continue }
            if endpoint.method != method {
                if !allowed.contains(endpoint.method) { allowed.append(endpoint.method) }
                continue
            }
            // `chunks/missing` (and `chunks/batch`) matches both its literal and `HASH`: the literal wins.
            if best == nil || literals > best!.literals { best = (endpoint, captures, literals) }
        }
        if let best { return .endpoint(best.endpoint, best.captures) }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed)
    }

    private static let placeholders: Set<String> = ["NAME", "HASH", "ID", "USER", "LINK", "SECRET"]

    /// The placeholders' values and the number of literal segments, if `segments` fits.
    private static func match(_ segments: [String], _ template: String) -> ([String: String], Int)? {
        let pattern = template.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard pattern.count == segments.count else { return nil }
        var captures: [String: String] = [:]
        var literals = 0
        for (expected, actual) in zip(pattern, segments) {
            if placeholders.contains(expected) {
                guard !actual.isEmpty else { return nil }
                captures[expected] = actual
            } else {
                guard expected == actual else { return nil }
                literals += 1
            }
        }
        return (captures, literals)
    }
}
