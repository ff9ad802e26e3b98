import ArgumentParser

/// The locations given to the server's commands (`serve`, `server-init`, `container copy`,
/// `container gc|stats|retention`): an empty one (an unset variable in a script, `--chunk-store
/// "$CHUNKS"`) is refused, never read as the current directory; and a chunk store that is a
/// directory must be given absolute, since where the server was started from says nothing about
/// where its chunks belong (doc/CLI.md). Refused as usage errors (exit 64) before anything is
/// opened or made.
enum LocationCheck {
    /// The problem with `value` given to `option` as a directory (relative is allowed), or nil.
    static func directoryProblem(_ value: String?, option: String) -> String? {
        guard let value, value.allSatisfy(\.isWhitespace) else { return nil }
        return "\(option) is empty (an unset variable?): give a directory"
    }

    /// The problem with `value` given as `--chunk-store`, or nil: it must be an `s3://` URL or
    /// an absolute directory.
    static func chunkStoreProblem(_ value: String?) -> String? {
        guard let value else { return nil }
        if value.allSatisfy(\.isWhitespace) {
            return "--chunk-store is empty (an unset variable?): give s3://BUCKET[/PREFIX]?endpoint=URL&region=R"
                + " or an absolute directory"
        }
        if value.lowercased().hasPrefix("s3://") || value.hasPrefix("/") { return nil }
        return "--chunk-store must be s3://… or an absolute directory, not the relative '\(value)'"
    }

    /// Throws the first problem among `problems` as a usage error.
    static func check(_ problems: String?...) throws {
        if let problem = problems.lazy.compactMap({ $0 }).first { throw ValidationError(problem) }
    }
}
