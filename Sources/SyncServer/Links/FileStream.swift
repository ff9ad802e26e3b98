import Hummingbird
import NIOCore
import SyncBackend

/// A file's content as a response body, chunk by chunk in manifest order: each chunk read,
/// decoded and checked against its manifest length off the cooperative pool, paced by the
/// bandwidth limits. A chunk that cannot be read or decoded (a sealed one among them) ends the
/// body short, which the client sees as a broken download, never as wrong bytes.
enum FileStream {
    /// The body of `file`, whose first chunk (nil for an empty file) was read already to refuse
    /// the request before its answer began. `holding` lives until the body has been written (a
    /// transfer's place among those allowed at once).
    static func body(
        of file: RemoteEntry, first: EncodedChunk?, in container: any Container, named name: String,
        bandwidth: ServerBandwidth?, holding: (any Sendable)? = nil
    ) -> ResponseBody {
        let manifest = file.state.manifest
        return ResponseBody(contentLength: Int(file.state.size)) { writer in
            defer { withExtendedLifetime(holding) {} }
            for (index, reference) in manifest.enumerated() {
                if let bandwidth {
                    try await SyncResponder.pace(bandwidth, Int(reference.length), .download, container: name)
                }
                let plain = try await plainChunk(reference, first: index == 0 ? first : nil, in: container)
                try await writer.write(ByteBuffer(bytes: plain))
            }
            try await writer.finish(nil)
        }
    }

    /// One chunk's plain bytes (`first` if given), checked against the manifest's length.
    static func plainChunk(
        _ reference: ChunkRef, first: EncodedChunk?, in container: any Container
    ) async throws -> [UInt8] {
        let chunk: EncodedChunk
        if let first { chunk = first } else { chunk = try await container.chunk(reference.hash) }
        ServerMetrics.chunkBytesOut.increment(by: chunk.payload.count)
        let plain = try await Offload.run { () throws(ContainerProtocolError) -> [UInt8] in
            try ChunkCodec.decode(chunk)
        }
        guard plain.count == reference.length else { throw ContainerProtocolError.corruptChunk(chunk.hash) }
        return plain
    }
}
