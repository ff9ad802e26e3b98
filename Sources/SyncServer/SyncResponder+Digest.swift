import Hummingbird
import SyncBackend

/// `GET .../digest`: the digest of the container's live tree (`TreeDigest`) and the cursor it
/// stands for, so a client can check that the tree it applied is the container's (after moving
/// to this server from another, or on `syncfs-mount verify`).
extension SyncResponder {
    func digest(_ call: Call) async throws(WireFailure) -> Response {
        let container = call.container
        let digest = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await container.treeDigest()
        }
        return JSONResponse.make(digest, status: 200)
    }
}
