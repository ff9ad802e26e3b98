import ArgumentParser
import Glibc

/// `--lifeline` (serve, `mount --foreground`): stop when standard input reaches end-of-file —
/// for a program that starts this one and keeps a pipe to its standard input open while it
/// wants it running (a test runner).
///
/// Standard input already at end-of-file when the command starts (`/dev/null`, systemd's
/// default) would mean "stop at once": it is a usage error (exit 64) with a message, checked
/// before anything is started. Without `--lifeline`, standard input is never read.
enum Lifeline {
    /// The usage error for `--lifeline` when standard input is already at end-of-file, nil
    /// otherwise. Reads at most one byte, only if one is waiting (`--lifeline` ignores what it
    /// reads); never blocks.
    static func problemAtStart() -> ValidationError? {
        var descriptor = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 0) == 1 else { return nil }
        if descriptor.revents & Int16(POLLNVAL) != 0 {
            return ValidationError("--lifeline: there is no standard input (it is closed)")
        }
        var byte: UInt8 = 0
        guard read(STDIN_FILENO, &byte, 1) == 0 else { return nil }
        return ValidationError(
            "--lifeline: standard input is already at end-of-file (/dev/null, as under systemd), which would "
                + "stop at once; --lifeline needs a pipe the starting program keeps open (leave it out for a service)")
    }
}
