import Dispatch

/// Runs blocking work (SQLite, CPU-heavy decoding) on a Dispatch thread, keeping the few threads
/// of Swift's cooperative pool (two on a two-core machine) free for requests.
enum Offload {
    static func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, E>, Never>) in
            DispatchQueue.global().async {
                continuation.resume(returning: Result { () throws(E) -> T in try work() })
            }
        }
        return try result.get()
    }
}
