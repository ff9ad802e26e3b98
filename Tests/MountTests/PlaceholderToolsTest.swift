import Foundation
import Glibc
import Testing

/// Programs that scan files (doc/SEMANTICS.md, "Placeholders": `st_blocks` is at least 1 for a
/// non-empty placeholder and `SEEK_DATA`/`SEEK_HOLE` report it as all data, so `cp`, `tar` and
/// `rsync` copy its real content): each copies a folder of placeholders on B into a plain
/// directory, which must then hold A's bytes — also for files with long zero runs and holes.
extension PlaceholderTests {
    @Suite struct ScanningTools {
        @Test func copyProgramsCopyTheRealContentOfPlaceholders() throws {
            try SyncedMounts.with(uploadDelay: 20) { mounts in
                let (a, b) = (mounts.a, mounts.b)
                let tools = ["cp", "tar", "tar-sparse", "rsync"]
                // One source folder per program, so each one meets placeholders.
                var expected: [String: [String: [UInt8]]] = [:]
                for (index, tool) in tools.enumerated() {
                    let files = try Self.sourceFiles(seed: UInt64(index + 1))
                    try makeDirectory(a.path("src-\(tool)"))
                    try writeFiles(files, under: a.path("src-\(tool)"))
                    // A file with holes (written sparse on A): 4 MiB, 64 KiB of data at 2 MiB.
                    let data = patternBytes(count: 65_536, seed: UInt64(100 + index))
                    try withFile(a.path("src-\(tool)/holes.bin"), O_WRONLY | O_CREAT | O_EXCL) { fd in
                        try posix("ftruncate") { ftruncate(fd, 4 << 20) }
                        try pwriteBytes(fd, data, offset: 2 << 20)
                    }
                    var holes = [UInt8](repeating: 0, count: 4 << 20)
                    holes.replaceSubrange((2 << 20)..<((2 << 20) + data.count), with: data)
                    expected[tool] = files.merging(["holes.bin": holes]) { first, _ in first }
                }
                try #require(a.expectSync())
                for tool in tools {
                    try #require(expectNamesArrive(expected[tool]!, under: b.path("src-\(tool)"), "B attaching"))
                }

                let out = mounts.baseDir + "/copies"
                try makeDirectory(out)
                let commands: [String: [[String]]] = [
                    "cp": [["cp", "-r", b.path("src-cp"), out + "/cp"]],
                    "tar": [
                        ["tar", "-c", "-f", out + "/plain.tar", "-C", b.root, "src-tar"],
                        ["mkdir", out + "/tar"],
                        ["tar", "-x", "-f", out + "/plain.tar", "-C", out + "/tar"],
                    ],
                    "tar-sparse": [
                        ["tar", "--sparse", "-c", "-f", out + "/sparse.tar", "-C", b.root, "src-tar-sparse"],
                        ["mkdir", out + "/tar-sparse"],
                        ["tar", "-x", "-f", out + "/sparse.tar", "-C", out + "/tar-sparse"],
                    ],
                    "rsync": [["rsync", "-a", b.path("src-rsync") + "/", out + "/rsync/"]],
                ]
                let copies = [
                    "cp": out + "/cp", "tar": out + "/tar/src-tar", "tar-sparse": out + "/tar-sparse/src-tar-sparse",
                    "rsync": out + "/rsync",
                ]
                for tool in tools {
                    let files = expected[tool]!
                    // An empty file has nothing to download: its state is not asserted.
                    expectStates(
                        files.filter { !$0.value.isEmpty }.keys.map { b.path("src-\(tool)/\($0)") }, in: ["online"],
                        "\(tool): before copying")
                    let blocks = try lstatPath(b.path("src-\(tool)/zeros.bin")).st_blocks
                    #expect(blocks >= 1, "\(tool): st_blocks of a non-empty placeholder is at least 1: \(blocks)")
                    for command in commands[tool]! {
                        let result = ModelProcess.run(command, timeout: 120)
                        #expect(result.ok, "\(tool): \(result)")
                    }
                    expectContents(files, under: copies[tool]!, "\(tool): the copy")
                    expectContents(files, under: b.path("src-\(tool)"), "\(tool): B after copying")
                }
            }
        }

        /// Small text files, a random MiB, a file with long runs of zero bytes (written as
        /// zeros) and an empty file, in two levels.
        private static func sourceFiles(seed: UInt64) throws -> [String: [UInt8]] {
            var files: [String: [UInt8]] = [:]
            for index in 0..<5 {
                files["text-\(index).txt"] = Array(
                    String(repeating: "line \(index) of seed \(seed)\n", count: 50 + index * 40).utf8)
            }
            files["sub/deeper.txt"] = bytes("deeper, seed \(seed)\n")
            files["random.bin"] = try randomBytes(1 << 20)
            files["zeros.bin"] =
                patternBytes(count: 256 << 10, seed: seed * 7) + [UInt8](repeating: 0, count: 3 << 20)
                + patternBytes(count: 256 << 10, seed: seed * 11) + [UInt8](repeating: 0, count: 1 << 20)
            files["empty"] = []
            return files
        }
    }
}
