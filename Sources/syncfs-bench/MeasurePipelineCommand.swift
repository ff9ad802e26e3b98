import ArgumentParser
import Foundation
import Glibc
import SyncBackend

/// `syncfs-bench measure-pipeline PATH...`: times the upload pipeline on one thread,
/// FileChunker → ChunkEncoder.encode (ChunkCodec.encode without per-chunk zlib setup) per chunk,
/// over the given files, and prints one JSON line:
///
///     {"files":…,"bytes":…,"chunks":…,"distinct_chunks":…,"encoded_bytes":…,"seconds_median":…,
///      "mb_per_s_median":…,"compression_ratio":…,"level":…,"stage":"…"}
///
/// `bytes` is the plain size read, `encoded_bytes` the sum of the encoded payloads (duplicates
/// included), MB is 10^6 bytes, `compression_ratio` is bytes / encoded_bytes. The files are read
/// `--repeat` times and the median duration is reported (so the page cache is warm for most runs).
/// `--stage chunk` stops after cutting and `--stage hash` after SHA-256, to time stages alone; the
/// fields a stage does not compute are null.
struct MeasurePipelineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "measure-pipeline",
        abstract: "Time the single-threaded upload pipeline (read, chunk, hash, compress) over files."
    )

    enum Stage: String, ExpressibleByArgument, CaseIterable {
        case chunk, hash, all
    }

    @Argument(help: "Files and directories (walked recursively; regular files only; links inside are not followed).")
    var paths: [String] = []

    @Option(help: "zlib level, 0...9.")
    var level: Int32 = 1

    @Option(name: .customLong("repeat"), help: "How many times to run over all the files; the median is reported.")
    var repetitions: Int = 3

    @Option(help: "How far each chunk goes: chunk (read and cut), hash (and SHA-256), all (and zlib).")
    var stage: Stage = .all

    func validate() throws {
        if paths.isEmpty { throw ValidationError("give at least one file or directory") }
        if !(0...9).contains(level) { throw ValidationError("--level must be 0...9") }
        if repetitions < 1 { throw ValidationError("--repeat must be at least 1") }
    }

    func run() throws {
        var files: [String] = []
        for path in paths { try collectFiles(path, followingLinks: true, into: &files) }
        var durations: [Double] = []
        var totals = Totals()
        for _ in 0..<repetitions {
            let clock = ContinuousClock()
            let start = clock.now
            totals = try measure(files)
            let elapsed = clock.now - start
            durations.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
        }
        let seconds = median(durations)
        let computesHashes = stage != .chunk
        let encodes = stage == .all
        let fields: [(String, String)] = [
            ("files", "\(files.count)"),
            ("bytes", "\(totals.bytes)"),
            ("chunks", "\(totals.chunks)"),
            ("distinct_chunks", computesHashes ? "\(totals.distinct.count)" : "null"),
            ("encoded_bytes", encodes ? "\(totals.encodedBytes)" : "null"),
            ("seconds_median", String(format: "%.6f", seconds)),
            ("mb_per_s_median", seconds > 0 ? String(format: "%.1f", Double(totals.bytes) / 1e6 / seconds) : "null"),
            (
                "compression_ratio",
                encodes && totals.encodedBytes > 0
                    ? String(format: "%.4f", Double(totals.bytes) / Double(totals.encodedBytes)) : "null"
            ),
            ("level", "\(level)"),
            ("stage", "\"\(stage.rawValue)\""),
        ]
        print("{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
    }

    private struct Totals {
        var bytes: Int64 = 0
        var chunks = 0
        var encodedBytes = 0
        var distinct = Set<ChunkHash>()
    }

    /// One pass of the pipeline over `files`.
    private func measure(_ files: [String]) throws -> Totals {
        var totals = Totals()
        let encoder = ChunkEncoder(level: level)
        for file in files {
            let descriptor = open(file, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw failure("cannot open \(file): \(String(cString: strerror(errno)))") }
            defer { close(descriptor) }
            var info = stat()
            guard fstat(descriptor, &info) == 0 else {
                throw failure("cannot stat \(file): \(String(cString: strerror(errno)))")
            }
            let length = Int64(info.st_size)
            do {
                try FileChunker.forEachChunk(of: descriptor, length: length) { chunk in
                    totals.chunks += 1
                    switch stage {
                    case .chunk:
                        break
                    case .hash:
                        totals.distinct.insert(ChunkCodec.hash(chunk))
                    case .all:
                        let encoded = encoder.encode(chunk)
                        totals.encodedBytes += encoded.payload.count
                        totals.distinct.insert(encoded.hash)
                    }
                }
            } catch let error as FileChunkerError {
                throw failure("cannot read \(file): \(error)")
            }
            totals.bytes += length
        }
        return totals
    }

    /// Adds `path` to `files` if it is a regular file, or every regular file below it if it is a directory.
    private func collectFiles(_ path: String, followingLinks: Bool, into files: inout [String]) throws {
        var info = stat()
        guard (followingLinks ? stat(path, &info) : lstat(path, &info)) == 0 else {
            throw failure("cannot stat \(path): \(String(cString: strerror(errno)))")
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            files.append(path)
        case S_IFDIR:
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: path)
            } catch {
                throw failure("cannot list \(path): \(error.localizedDescription)")
            }
            for name in names.sorted() {
                try collectFiles(path + "/" + name, followingLinks: false, into: &files)
            }
        default:
            break
        }
    }

    private func failure(_ message: String) -> ExitCode {
        printError("syncfs-bench measure-pipeline: \(message)")
        return .failure
    }

    private func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
