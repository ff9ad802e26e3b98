import Foundation
import NIOHTTP1
import SyncBackend
import SyncServer
import Testing

/// Keeps doc/PROTOCOL.md true: its endpoint table is exactly the server's routing table and each
/// row answers with the success status it states; its error table lists every `WireError.Code`
/// with its status; every JSON example decodes as the type named on the line before it.
@Suite struct ProtocolDocumentTests {
    static let document: String = {
        // #filePath is <package>/Tests/SyncServerTests/ProtocolDocumentTests.swift.
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        return (try? String(contentsOf: root.appendingPathComponent("doc/PROTOCOL.md"), encoding: .utf8)) ?? ""
    }()

    /// The table rows (cells without the outer bars) of the section titled `heading`.
    static func tableRows(under heading: String) -> [[String]] {
        let lines = document.components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: heading) else { return [] }
        var rows: [[String]] = []
        var inTable = false
        for line in lines[(start + 1)...] {
            if line.hasPrefix("## ") { break }
            guard line.hasPrefix("|") else {
                if inTable { break }
                continue
            }
            inTable = true
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            if cells.allSatisfy({ $0.allSatisfy { $0 == "-" } }) { continue }  // the separator row
            rows.append(cells)
        }
        return Array(rows.dropFirst())  // the header row
    }

    struct Row: Hashable, CustomStringConvertible {
        var method: String
        var path: String
        var query: String
        var status: Int
        var description: String { "\(method) \(path)" }
    }

    static var endpointRows: [Row] {
        tableRows(under: "## Endpoints").map { cells in
            let target = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let parts = target.split(separator: "?", maxSplits: 1).map(String.init)
            let status = Int(cells[2].prefix { $0.isNumber }) ?? -1
            return Row(method: cells[0], path: parts[0], query: parts.count > 1 ? parts[1] : "", status: status)
        }
    }

    @Test func theEndpointTableIsTheRoutingTable() {
        let documented = Set(Self.endpointRows.map { "\($0.method) \($0.path)" })
        let served = Set(Endpoint.allCases.map { "\($0.method) \($0.pathTemplate)" })
        #expect(!documented.isEmpty, "no endpoint table found in doc/PROTOCOL.md")
        #expect(documented == served)
        #expect(Self.endpointRows.count == Endpoint.allCases.count, "a row is listed twice")
    }

    @Test(arguments: ServerBackend.allCases) func everyEndpointAnswersAsDocumented(backend: ServerBackend) async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            // History rows answer 501 on a backend whose container keeps no history (yet).
            let keepsHistory = try await fixture.container() is any ContainerHistory
            let chunk = Sample.chunk(Array("a chunk for the document test".utf8))
            let entry = Sample.create(Sample.file("doc.txt", chunks: [chunk]))
            let access = DocumentAccess(fixture)
            let admin = try await access.adminToken()
            let view = try await access.link(.view)
            let drop = try await access.link(.uploadOnly)
            let doomed = try await access.link(.download, path: "doc.txt")
            // PUT goes first, so that the GET of the chunk and the commit find it.
            let rows = Self.endpointRows.sorted { ($0.method == "PUT" ? 0 : 1) < ($1.method == "PUT" ? 0 : 1) }
            for row in rows {
                let secret = row.path.hasSuffix("/upload") ? drop.secret : view.secret
                let path =
                    row.path.replacingOccurrences(of: "NAME", with: fixture.name)
                    .replacingOccurrences(of: "SECRET", with: secret)
                    .replacingOccurrences(of: "LINK", with: doomed.record.id)
                    .replacingOccurrences(of: "USER", with: try await access.memberToRemove())
                    .replacingOccurrences(of: "HASH", with: chunk.hash.hex)
                    .replacingOccurrences(of: "ID", with: FileID.root.hex)
                let query = row.query.replacingOccurrences(of: "CURSOR", with: "")
                    .replacingOccurrences(of: "=N", with: "=10").replacingOccurrences(of: "=MS", with: "=0")
                    .replacingOccurrences(of: "=VERSION", with: "=1").replacingOccurrences(of: "=T", with: "=0")
                    .replacingOccurrences(of: "after=C&", with: "")
                    .replacingOccurrences(of: "path=P", with: row.path.hasSuffix("/content") ? "path=doc.txt" : "path=")
                    .replacingOccurrences(of: "name=F", with: "name=dropped.txt")
                let target = query.isEmpty ? path : path + "?" + query
                let reply: Reply
                switch (row.method, row.path.hasSuffix("/commits"), row.path.hasSuffix("/missing")) {
                case ("POST", _, _) where row.path == WireProtocol.Path.login:
                    reply = try await LoginTests.login(fixture, try await Self.member(fixture))
                case ("POST", _, _) where row.path.hasSuffix("/commits/batch"):
                    let batch = CommitBatchRequest(changes: [Sample.create(Sample.directory("doc batch"))])
                    reply = try await fixture.send(.POST, target, json: batch)
                case ("POST", _, _) where row.path.hasSuffix("/commits/all-or-nothing"):
                    let call = CommitBatchRequest(changes: [Sample.create(Sample.directory("doc all or nothing"))])
                    reply = try await fixture.send(.POST, target, json: call)
                case ("POST", _, _) where row.path.hasSuffix("/chunks/batch"):
                    let batch = try ChunkBatchFormat.encode([Sample.chunk(Array("a batch's chunk".utf8))])
                    reply = try await fixture.send(.POST, target, body: batch)
                case ("POST", _, _) where Self.lockBody(for: row.path) != nil:
                    reply = try await fixture.send(.POST, target, json: Self.lockBody(for: row.path)!)
                case (_, _, _) where row.path.contains("/links/SECRET"):
                    reply = try await fixture.send(
                        HTTPMethod(rawValue: row.method), target, auth: .none, body: row.method == "POST" ? [1] : nil)
                case ("POST", _, _) where row.path.hasSuffix("/members"):
                    reply = try await fixture.send(
                        .POST, target, json: MemberChange(user: "doc-user", role: .viewer), auth: .token(admin))
                case ("POST", _, _) where row.path.hasSuffix("/links"):
                    reply = try await fixture.send(
                        .POST, target, json: LinkOrderRequest(path: "", kind: .view), auth: .token(admin))
                case ("PUT", _, _) where row.path.hasSuffix("/retention"):
                    reply = try await fixture.send(.PUT, target, json: RetentionPolicy(days: 90), auth: .token(admin))
                case (_, _, _)
                where Endpoint.allCases.contains { $0.pathTemplate == row.path && $0.requiredRole == .admin }:
                    reply = try await fixture.send(HTTPMethod(rawValue: row.method), target, auth: .token(admin))
                case ("PUT", _, _): reply = try await fixture.put(chunk)
                case ("POST", true, _): reply = try await fixture.commit(entry)
                case ("POST", _, true):
                    reply = try await fixture.send(.POST, target, json: MissingChunksRequest(hashes: [chunk.hash]))
                default: reply = try await fixture.send(HTTPMethod(rawValue: row.method), target)
                }
                let history = row.path.hasSuffix("/versions") || row.path.hasSuffix("/trash")
                let expected = history && !keepsHistory ? WireError.Code.notImplemented.status : row.status
                #expect(reply.status == expected, "\(row): \(reply.status) \(reply.text)")
            }
        }
    }

    /// The admin token, links and members the admin and link rows need.
    struct DocumentAccess {
        let fixture: ServerFixture
        init(_ fixture: ServerFixture) { self.fixture = fixture }

        func adminToken() async throws -> String {
            try await HostileMemberTests.member(fixture, "doc-admin", role: .admin).token
        }

        func link(_ kind: LinkKind, path: String = "") async throws -> (record: LinkRecord, secret: String) {
            try await LinkTree.link(fixture, .init(container: fixture.name, prefix: path, kind: kind))
        }

        /// A member for the `DELETE …/members/USER` row (made again for each row it replaces).
        func memberToRemove() async throws -> String {
            let admin = AccountAdmin(store: try fixture.backend.accessStore(on: fixture.server))
            if try await admin.users().contains(where: { $0.name == "doc-leaver" }) == false {
                _ = try await admin.addUser("doc-leaver")
            }
            try await admin.setMember(user: "doc-leaver", container: fixture.name, role: .viewer)
            return "doc-leaver"
        }
    }

    /// A user with a password who is a member of the fixture's container (for the login row).
    static func member(_ fixture: ServerFixture) async throws -> String {
        _ = try await LoginTests.user(fixture, "doc-user")
        return "doc-user"
    }

    /// The body of a request to a lock endpoint (`/locks`, `/locks/unlock`, ...), or nil.
    static func lockBody(for path: String) -> (any Encodable & Sendable)? {
        let session = LockSession.random()
        let claim = LockClaim(
            fileID: .random(), kind: .posix, mode: .exclusive, session: session, owner: 1, holderName: "doc")
        if path.hasSuffix("/locks") { return LockRequest(claim: claim, leaseSeconds: 30) }
        if path.hasSuffix("/locks/unlock") {
            return LockRelease(fileID: claim.fileID, kind: .posix, session: session, owner: 1)
        }
        if path.hasSuffix("/locks/renew") { return LockRenewal(session: session, leaseSeconds: 30) }
        if path.hasSuffix("/locks/release") { return LockSessionRelease(session: session) }
        return nil
    }

    @Test func theErrorTableListsEveryCodeWithItsStatus() {
        var documented: [String: Int] = [:]
        for cells in Self.tableRows(under: "## Error codes") {
            documented[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = Int(cells[1])
        }
        for code in WireError.Code.allCases {
            #expect(documented[code.rawValue] == code.status, "\(code.rawValue)")
        }
        #expect(documented.count == WireError.Code.allCases.count, "the table lists codes that do not exist")
    }

    /// The conventions name every header of the protocol and state the byte limits as they are.
    @Test func theConventionsNameTheHeadersAndLimits() {
        for header in [
            WireProtocol.containerIDHeader, WireProtocol.chunkEncodingHeader, WireProtocol.plainLengthHeader,
            "Retry-After",
        ] {
            #expect(Self.document.contains("`\(header)"), "\(header) is not mentioned")
        }
        let limits = [
            "JSON bodies ≤ \(WireProtocol.maxJSONBodyBytes >> 20) MiB",
            "chunk bodies and plain lengths ≤ \(WireProtocol.maxChunkBodyBytes >> 20) MiB",
            "at most \(WireProtocol.maxChangePageBytes >> 20) MiB in its form, JSON or binary",
        ]
        let flowing = Self.document.replacingOccurrences(of: "\n  ", with: " ")
        for limit in limits { #expect(flowing.contains(limit), "'\(limit)' is not in the document") }
    }

    @Test func everyExampleDecodesAsItsType() throws {
        let lines = Self.document.components(separatedBy: "\n")
        var examples: [(type: String, json: String)] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            if line.hasPrefix("```json") {
                let marker = index > 0 ? lines[index - 1] : ""
                let type = marker.hasPrefix("<!-- example: ") ? String(marker.dropFirst(14).dropLast(4)) : ""
                #expect(!type.isEmpty, "the JSON block at line \(index + 1) names no type")
                var body: [String] = []
                index += 1
                while index < lines.count, !lines[index].hasPrefix("```") {
                    body.append(lines[index])
                    index += 1
                }
                examples.append((type, body.joined(separator: "\n")))
            }
            index += 1
        }
        var decoded: [String: [Any]] = [:]
        for (type, json) in examples {
            do {
                decoded[type, default: []].append(try Self.decode(type, Data(json.utf8)))
            } catch {
                Issue.record("the \(type) example does not decode: \(error)\n\(json)")
            }
        }
        for type in [
            "CommitRequest", "CommitOutcome", "ChangeBatch", "RemoteEntry", "MissingChunksRequest",
            "MissingChunksResponse", "WireError", "ContainerInfo", "WaitResponse", "HealthStatus", "HistoryResponse",
            "TreeDigest", "LockRequest", "LockResponse", "LockRelease", "LockRenewal", "LockSessionRelease", "LockList",
            "CommitBatchRequest", "CommitBatchResponse", "LoginRequest", "LoginGrant", "LinkInfo", "LinkListing",
            "LinkUploadAnswer", "LinkOrderRequest", "CreatedLink", "MemberChange", "RetentionPolicy",
            "AllOrNothingOutcome",
        ] {
            #expect(decoded[type] != nil, "no \(type) example")
        }
        let changes = (decoded["CommitRequest"] ?? []).compactMap { ($0 as? CommitRequest)?.change }
        #expect(changes.contains { if case .put = $0 { true } else { false } }, "no put example")
        #expect(changes.contains(.delete), "no delete example")
        let atomic = (decoded["AllOrNothingOutcome"] ?? []).compactMap { $0 as? AllOrNothingOutcome }
        #expect(atomic.contains { $0.isCommitted } && atomic.contains { !$0.isCommitted }, "both answers")
        let outcomes = (decoded["CommitOutcome"] ?? []).compactMap { $0 as? CommitOutcome }
        #expect(outcomes.contains { if case .committed = $0 { true } else { false } }, "no committed example")
        #expect(outcomes.contains { if case .versionConflict = $0 { true } else { false } }, "no conflict example")
        for error in (decoded["WireError"] ?? []).compactMap({ $0 as? WireError }) {
            #expect(WireError.Code(rawValue: error.error) != nil, "unknown code \(error.error)")
        }
    }

    private static func decode(_ type: String, _ data: Data) throws -> Any {
        let decoder = JSONDecoder()
        switch type {
        case "CommitRequest": return try decoder.decode(CommitRequest.self, from: data)
        case "CommitOutcome": return try decoder.decode(CommitOutcome.self, from: data)
        case "ChangeBatch": return try decoder.decode(ChangeBatch.self, from: data)
        case "RemoteEntry": return try decoder.decode(RemoteEntry.self, from: data)
        case "EntryState": return try decoder.decode(EntryState.self, from: data)
        case "MissingChunksRequest": return try decoder.decode(MissingChunksRequest.self, from: data)
        case "MissingChunksResponse": return try decoder.decode(MissingChunksResponse.self, from: data)
        case "WireError": return try decoder.decode(WireError.self, from: data)
        case "ContainerInfo": return try decoder.decode(ContainerInfo.self, from: data)
        case "WaitResponse": return try decoder.decode(WaitResponse.self, from: data)
        case "HealthStatus": return try decoder.decode(HealthStatus.self, from: data)
        case "LoginRequest": return try decoder.decode(LoginRequest.self, from: data)
        case "LoginGrant": return try decoder.decode(LoginGrant.self, from: data)
        case "HistoryResponse": return try decoder.decode(HistoryResponse.self, from: data)
        case "TreeDigest": return try decoder.decode(TreeDigest.self, from: data)
        case "LockRequest": return try decoder.decode(LockRequest.self, from: data)
        case "LockResponse": return try decoder.decode(LockResponse.self, from: data)
        case "LockRelease": return try decoder.decode(LockRelease.self, from: data)
        case "LockRenewal": return try decoder.decode(LockRenewal.self, from: data)
        case "LockSessionRelease": return try decoder.decode(LockSessionRelease.self, from: data)
        case "LockList": return try decoder.decode(LockList.self, from: data)
        case "CommitBatchRequest": return try decoder.decode(CommitBatchRequest.self, from: data)
        case "CommitBatchResponse": return try decoder.decode(CommitBatchResponse.self, from: data)
        case "AllOrNothingOutcome": return try decoder.decode(AllOrNothingOutcome.self, from: data)
        case "LinkInfo": return try decoder.decode(LinkInfo.self, from: data)
        case "LinkListing": return try decoder.decode(LinkListing.self, from: data)
        case "LinkUploadAnswer": return try decoder.decode(LinkUploadAnswer.self, from: data)
        case "LinkOrderRequest": return try decoder.decode(LinkOrderRequest.self, from: data)
        case "CreatedLink": return try decoder.decode(CreatedLink.self, from: data)
        case "MemberChange": return try decoder.decode(MemberChange.self, from: data)
        case "RetentionPolicy": return try decoder.decode(RetentionPolicy.self, from: data)
        default: throw TestFailure("no decoder for the example type '\(type)'")
        }
    }
}
