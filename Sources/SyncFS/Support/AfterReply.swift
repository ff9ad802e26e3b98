import Glibc

/// Work that must wait until the FUSE request the calling thread handles has been answered.
///
/// The kernel applies some of a request's effects only when its answer arrives: a truncation's
/// new size (`open` with `O_TRUNC`, `setattr`) is set by the truncating thread once it gets its
/// answer. A read that waited for the truncated file's download and is answered first sees the
/// old size in the kernel: a direct read falls back to the page cache, which the writeback cache
/// fills with zeros up to that size. So the adapter runs such requests in `handling`, and what
/// they set off for other requests goes through `run`: it runs once the answer is sent.
///
/// Per thread: `run` on a thread outside `handling` (the engine's, a test's) runs at once.
enum AfterReply {
    /// What waits on one thread for its request's answer; touched by that thread only.
    private final class Pending {
        var works: [@Sendable () -> Void] = []
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left")
        return key
    }()

    /// Marks a thread inside `handling` with nothing put off yet (no allocation per request).
    private static var handlingMark: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: 1)! }

    /// Runs `body` (a request's handling and its answer) and then, on this thread, the work that
    /// `run` put off meanwhile. Nested calls are part of the outermost one.
    static func handling<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        if pthread_getspecific(key) != nil { return try body() }
        pthread_setspecific(key, handlingMark)
        defer {
            let raw = pthread_getspecific(key)
            pthread_setspecific(key, nil)
            if let raw, raw != handlingMark {
                for work in Unmanaged<Pending>.fromOpaque(raw).takeRetainedValue().works { work() }
            }
        }
        return try body()
    }

    /// Runs `work` once the request this thread handles has been answered, or at once if it
    /// handles none.
    static func run(_ work: @escaping @Sendable () -> Void) {
        guard let raw = pthread_getspecific(key) else { return work() }
        if raw == handlingMark {
            let pending = Pending()
            pending.works.append(work)
            pthread_setspecific(key, Unmanaged.passRetained(pending).toOpaque())
        } else {
            Unmanaged<Pending>.fromOpaque(raw).takeUnretainedValue().works.append(work)
        }
    }
}
