import Foundation
import TestSupport
import Testing

/// An empty location (`--chunk-store "$UNSET"`) is never read as the current directory, and a
/// chunk store given as a relative directory is refused: usage errors (64) of `serve`,
/// `server-init`, `container copy` and `container gc|stats|retention`, before anything is opened
/// or made (doc/CLI.md). Nothing here needs PostgreSQL: the refusal comes first.
@Suite("Empty and relative locations")
struct EmptyLocationTests {
    /// A database URL nothing answers at: reaching it would be a failure of its own (75), not 64.
    static let database = "postgres://syncfs@127.0.0.1:1/none"

    @Test func emptyOrRelativeLocationsAreRefusedAndNothingIsMadeInTheCurrentDirectory() throws {
        let directory = try TemporaryDirectory("syncfs-locations")
        defer { directory.remove() }
        // `--lifeline` with standard input at its end: a `serve` that took the location would
        // stop at once (64, saying so) instead of serving until the test is killed.
        let listen = ["--listen", "127.0.0.1:0", "--lifeline"]
        let cases: [(arguments: [String], message: String)] = [
            (["serve", "--database", Self.database, "--chunk-store", ""] + listen, "--chunk-store is empty"),
            (["serve", "--database", Self.database, "--chunk-store", " "] + listen, "--chunk-store is empty"),
            (["serve", "--database", Self.database, "--chunk-store", "chunks"] + listen, "relative 'chunks'"),
            (
                ["serve", "--database", Self.database, "--chunk-store", "/srv/chunks", "--tokens", ""] + listen,
                "--tokens is empty"
            ),
            (["serve", "--root", ""] + listen, "--root is empty"),
            (["server-init", "--database", Self.database, "--chunk-store", ""], "--chunk-store is empty"),
            (["server-init", "--database", Self.database, "--chunk-store", "./chunks"], "relative './chunks'"),
            (["container", "copy", "", directory.path + "/copy"], "the source is empty"),
            (["container", "copy", directory.path + "/box", ""], "the destination is empty"),
            (
                [
                    "container", "copy", directory.path + "/box", "db:box", "--database", Self.database,
                    "--chunk-store", "",
                ],
                "--chunk-store is empty"
            ),
            (["container", "gc", ""], "the container is empty"),
            (
                ["container", "stats", "db:box", "--database", Self.database, "--chunk-store", ""],
                "--chunk-store is empty"
            ),
        ]
        for (arguments, message) in cases {
            let result = try Binary.run(arguments, in: directory.path)
            #expect(result.status == 64, "\(arguments): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [], "nothing made here")
    }
}
