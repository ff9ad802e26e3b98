import ArgumentParser
import Foundation

/// `syncfs-bench`: the benchmarks' own commands (scripts/bench), kept out of the shipped
/// `syncfs-mount`. Each fills a container or measures one part without a mount and prints one
/// JSON line on standard output; errors go to standard error with exit status 1.
@main
struct SyncFSBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncfs-bench",
        abstract: "Seed containers and measure SyncFS's parts for the benchmarks (scripts/bench).",
        subcommands: [
            SeedContainerCommand.self, SeedSyntheticCommand.self, MeasurePipelineCommand.self,
            MeasureServerCommand.self,
        ]
    )
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
