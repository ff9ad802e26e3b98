import Glibc

/// Writes raw bytes to standard error, unbuffered.
func fwriteStderr(_ pointer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    write(STDERR_FILENO, pointer, count)
}
