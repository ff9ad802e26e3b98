import Foundation
import TestSupport
import Testing

@testable import SyncMerge

/// A folder tree with ignore files, to be checked path by path against `git check-ignore`.
struct IgnoreTable: Sendable, CustomTestStringConvertible {
    var name: String
    /// Ignore file text by folder ("" for the root).
    var files: [String: String]
    /// The paths to create; a trailing "/" makes a folder. The folders above them are checked too.
    var paths: [String]

    var testDescription: String { name }

    /// Every path to check, folders with a trailing "/", sorted.
    var checkedPaths: [String] {
        var all = Set<String>()
        for path in paths {
            let components = path.split(separator: "/")
            for depth in 1..<components.count { all.insert(components[..<depth].joined(separator: "/") + "/") }
            all.insert(path)
        }
        return all.sorted()
    }
}

/// What git says of one path: the line that decides it, or nil.
struct GitVerdict: Equatable, CustomStringConvertible {
    /// The ignore file's folder ("" for the root); nil for the excludes file.
    var folder: String?
    var line: Int
    var pattern: String

    var ignored: Bool { !pattern.hasPrefix("!") }

    var description: String { "\(folder.map { "\($0)/.gitignore" } ?? "excludes"):\(line):\(pattern)" }
}

/// Runs `git check-ignore` on tables, in a fresh repository each, away from the user's and the
/// system's git configuration.
enum GitReference {
    /// The git executable on PATH, or nil.
    static let git: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/git" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    static let missing = "git is not installed: the ignore matcher cannot be checked against git check-ignore"

    /// git's verdict for every checked path of `table`, with `excludes` as core.excludesFile.
    static func verdicts(_ table: IgnoreTable, excludes: String = "") throws -> [String: GitVerdict?] {
        let directory = try TemporaryDirectory("syncfs-ignore-git")
        let root = directory.path + "/repo"
        let files = FileManager.default
        try files.createDirectory(atPath: root, withIntermediateDirectories: true)
        _ = try run(["init", "-q", root], in: directory.path)
        for path in table.paths {
            if path.hasSuffix("/") {
                try files.createDirectory(atPath: root + "/" + path, withIntermediateDirectories: true)
            } else {
                let folder = path.split(separator: "/").dropLast().joined(separator: "/")
                try files.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
                try Data().write(to: URL(fileURLWithPath: root + "/" + path))
            }
        }
        for (folder, text) in table.files {
            let folderPath = folder.isEmpty ? root : root + "/" + folder
            try files.createDirectory(atPath: folderPath, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: URL(fileURLWithPath: folderPath + "/.gitignore"))
        }
        let excludesPath = directory.path + "/excludes"
        try Data(excludes.utf8).write(to: URL(fileURLWithPath: excludesPath))
        let paths = table.checkedPaths.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        let output = try run(
            [
                "-C", root, "-c", "core.ignorecase=false", "-c", "core.excludesFile=" + excludesPath,
                "check-ignore", "--no-index", "-v", "-n", "-z", "--stdin",
            ], in: directory.path, input: Data(paths.joined(separator: "\0").utf8) + [0])
        // Records of four fields: source, line, pattern, path (source empty: no match).
        let fields = output.split(separator: 0, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        var verdicts: [String: GitVerdict?] = [:]
        var index = 0
        while index + 3 < fields.count {
            let (source, line, pattern, path) = (fields[index], fields[index + 1], fields[index + 2], fields[index + 3])
            index += 4
            guard !source.isEmpty else {
                verdicts[path] = .some(nil)
                continue
            }
            let folder: String? =
                source == excludesPath
                ? nil : source == ".gitignore" ? "" : String(source.dropLast("/.gitignore".count))
            verdicts[path] = GitVerdict(folder: folder, line: Int(line) ?? 0, pattern: pattern)
        }
        guard verdicts.count == paths.count else {
            throw TestSupportError("git check-ignore answered for \(verdicts.count) of \(paths.count) paths")
        }
        return verdicts
    }

    /// git's standard output; throws when it fails.
    private static func run(_ arguments: [String], in directory: String, input: Data = Data()) throws -> Data {
        guard let git else { throw TestSupportError(missing) }
        let inputPath = directory + "/stdin"
        let outputPath = directory + "/stdout"
        try input.write(to: URL(fileURLWithPath: inputPath))
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: git)
        process.arguments = arguments
        process.environment = [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": directory,
            "XDG_CONFIG_HOME": directory, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C",
        ]
        process.standardInput = FileHandle(forReadingAtPath: inputPath)
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        try process.run()
        process.waitUntilExit()
        // check-ignore exits 1 when no path is ignored.
        guard process.terminationStatus == 0 || process.terminationStatus == 1 else {
            throw TestSupportError("git \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
        return try Data(contentsOf: URL(fileURLWithPath: outputPath))
    }

    /// The paths where `rules` and git disagree, one line each.
    static func disagreements(_ table: IgnoreTable, rules: IgnoreRules, git: [String: GitVerdict?]) -> [String] {
        table.checkedPaths.compactMap { checked in
            let isDirectory = checked.hasSuffix("/")
            let path = isDirectory ? String(checked.dropLast()) : checked
            let ours = rules.match(path, isDirectory: isDirectory)
            let theirs = git[path] ?? nil
            let oursFolder: String?? = ours.map { match in
                if case .synced(let folder) = match.source { return folder } else { return nil }
            }
            let agree =
                ours?.ignored == theirs?.ignored && ours?.line == theirs?.line && oursFolder == theirs.map(\.folder)
            guard !agree else { return nil }
            let describedOurs = ours.map { "\($0.source):\($0.line):\($0.pattern)" } ?? "no match"
            return
                "\(table.name): \(checked.debugDescription): git \(theirs?.description ?? "no match"), ours \(describedOurs)"
        }
    }
}
