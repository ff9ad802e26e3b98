/// The checks a container makes on a chunk it is asked to store. The hash itself is trusted (the
/// reader verifies it); these catch requests that cannot be a chunk at all.
package enum ChunkValidation {
    package static func check(_ chunk: EncodedChunk) throws(ContainerProtocolError) {
        guard chunk.plainLength >= 0 else { throw .invalidRequest("chunk \(chunk.hash) has a negative length") }
        if chunk.encoding == .raw || chunk.encoding == .sealed, chunk.payload.count != chunk.plainLength {
            throw .invalidRequest(
                "\(chunk.encoding == .raw ? "raw" : "sealed") chunk \(chunk.hash) holds \(chunk.payload.count) bytes, "
                    + "not \(chunk.plainLength)")
        }
    }
}
