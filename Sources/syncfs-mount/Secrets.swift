import Foundation
import Glibc
import SyncServer

/// Passwords and codes a person types: from a file's first line (scripts, tests), or asked on
/// the terminal without echo. Never from the command line, where `ps` would show them.
enum Secrets {
    /// The secret in `file` (its first line; the file must be readable by its owner only), or
    /// asked with `prompt` on the terminal (twice when `confirm`). Exits 65 when there is none.
    static func read(file: String?, prompt: String, confirm: Bool = false) throws -> String {
        if let file {
            var status = stat()
            guard stat(file, &status) == 0 else {
                throw fail(SyncServerError(.badInput, "cannot read \(file): \(String(cString: strerror(errno)))"))
            }
            guard status.st_mode & 0o077 == 0, status.st_uid == geteuid() || status.st_uid == 0 else {
                throw fail(
                    SyncServerError(
                        .badInput, "\(file) holds a secret: it must be yours and readable by you only (chmod 600)"))
            }
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw fail(SyncServerError(.badInput, "cannot read \(file)"))
            }
            let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            guard !line.isEmpty else {
                throw fail(SyncServerError(.badInput, "\(file) has no secret on its first line"))
            }
            return String(line)
        }
        guard isatty(0) != 0 else {
            throw fail(SyncServerError(.badInput, "no terminal to ask on: give the secret in a file (--…-file FILE)"))
        }
        let first = ask(prompt)
        if confirm, ask("Again: ") != first {
            throw fail(SyncServerError(.badInput, "the two entries differ"))
        }
        guard !first.isEmpty else { throw fail(SyncServerError(.badInput, "nothing was typed")) }
        return first
    }

    /// One line from the terminal with echo off (restored afterwards).
    private static func ask(_ prompt: String) -> String {
        FileHandle.standardError.write(Data(prompt.utf8))
        var saved = termios()
        let hasTerminal = tcgetattr(0, &saved) == 0
        if hasTerminal {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            _ = tcsetattr(0, TCSAFLUSH, &quiet)
        }
        defer {
            if hasTerminal { _ = tcsetattr(0, TCSAFLUSH, &saved) }
            FileHandle.standardError.write(Data("\n".utf8))
        }
        return readLine(strippingNewline: true) ?? ""
    }
}
