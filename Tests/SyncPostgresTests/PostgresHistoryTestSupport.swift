import Foundation
import PostgresNIO
import SyncBackend
import SyncPostgresTesting
import Testing

@testable import SyncPostgres

/// The chunk of `bytes` as a client would upload it (zlib when it saves space).
func encodedChunk(_ bytes: [UInt8]) -> EncodedChunk {
    bytes.withUnsafeBytes { ChunkCodec.encode($0) }
}

func encodedChunk(_ text: String) -> EncodedChunk { encodedChunk(Array(text.utf8)) }

/// A file of `chunks`, in that order.
func fileState(_ name: String, _ chunks: [EncodedChunk], in parent: FileID = .root) -> EntryState {
    EntryState(
        parent: parent, name: Array(name.utf8), kind: .file, mode: 0o644, mtime: 1_000,
        size: chunks.reduce(0) { $0 + Int64($1.plainLength) },
        manifest: chunks.map { ChunkRef(hash: $0.hash, length: Int64($0.plainLength)) })
}

/// Commits `request`, which must be committed.
@discardableResult
func mustCommit(_ container: PostgresContainer, _ request: CommitRequest) async throws -> RemoteEntry {
    let outcome = try await container.commit(request)
    guard case .committed(let entry) = outcome else { throw TestFailure("not committed: \(outcome)") }
    return entry
}

/// Puts `chunks` and commits `state` for `id` on `base`, which must be committed.
@discardableResult
func mustStore(
    _ container: PostgresContainer, _ id: FileID, base: EntryVersion, _ state: EntryState, chunks: [EncodedChunk]
) async throws -> RemoteEntry {
    for chunk in chunks { try await container.putChunk(chunk) }
    return try await mustCommit(container, put(id, base: base, state))
}

func deletion(_ entry: RemoteEntry) -> CommitRequest {
    CommitRequest(id: entry.id, baseVersion: entry.version, change: .delete, device: "d")
}

extension PostgresFixture {
    /// One integer from the fixture's database.
    func value(_ query: String) async throws -> Int64 {
        try await PostgresScratchDatabase.withAdmin(database.url) { client in
            for try await value in try await client.query(PostgresQuery(unsafeSQL: query)).decode(Int64.self) {
                return value
            }
            throw TestFailure("no value for \(query)")
        }
    }
}

/// Nanoseconds since the epoch, now.
func nowNanoseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1_000_000_000) }
