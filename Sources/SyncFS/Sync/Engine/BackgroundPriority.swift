import Glibc

/// The engine's background work (the uploader's chunking, compression and hashing) yields the
/// CPU to the programs using the folder: the calling thread's nice value is raised (Linux keeps
/// a nice value per thread; `setpriority` with a thread's kernel id changes only that thread).
enum BackgroundPriority {
    /// The nice value of a background thread: below every foreground program's default 0.
    static let niceness: Int32 = 10

    /// Lowers the calling thread's priority to `niceness` (never raises it). Best effort: a
    /// refusal leaves the thread as it was.
    static func lowerCallingThread() {
        let thread = InotifyEcho.currentThreadID()
        guard thread > 0 else { return }
        errno = 0
        let current = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(thread))
        guard errno == 0, current < niceness else { return }
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(thread), niceness)
    }
}
