import Foundation
import Glibc
import TestSupport

/// One thing a mount's worker did to a token: wrote it, read it (saw it), or removed it.
struct TokenEvent: Sendable, CustomStringConvertible {
    /// Milliseconds since the run started (one clock for every mount).
    var milliseconds: Int
    var mount: String
    var op: Int
    var kind: ConvergenceOp
    var path: String

    var description: String { "\(milliseconds) ms: mount \(mount) op #\(op) \(kind.rawValue) \(path)" }
}

/// The random operations of the convergence test. Every one is made on the mount through plain
/// system calls, as a program would.
enum ConvergenceOp: String, CaseIterable, Sendable {
    /// A new file (`O_EXCL`) with one to three new token lines.
    case create
    /// One new line appended through `O_APPEND`.
    case append
    /// One new line inserted at a random position (the file rewritten in place).
    case insert
    /// One line replaced by a new one (the old token is removed).
    case replace
    /// An editor's save: a temporary file with the new content renamed over the file.
    case saveByRename = "save-by-rename"
    /// A file renamed within its folder.
    case renameFile = "rename-file"
    /// A file moved to another folder.
    case moveFile = "move-file"
    case deleteFile = "delete-file"
    case mkdir
    /// Succeeds only if the folder is empty (on this mount).
    case rmdir
    /// A folder moved into another folder (a cycle fails with EINVAL).
    case moveDirectory = "move-dir"
    case renameDirectory = "rename-dir"

    /// How often each is picked (out of the sum).
    var weight: Int {
        switch self {
        case .create: return 12
        case .append: return 14
        case .insert: return 14
        case .replace: return 10
        case .saveByRename: return 10
        case .renameFile: return 7
        case .moveFile: return 7
        case .deleteFile: return 7
        case .mkdir: return 7
        case .rmdir: return 5
        case .moveDirectory: return 4
        case .renameDirectory: return 3
        }
    }
}

/// One mount's random stream of operations, run on a thread of its own, and what it did to every
/// token (the oracle's input).
///
/// Files are text made of token lines (`t<seed>-<mount>-<n>`); every operation that writes adds
/// new tokens. A token may disappear only where a mount removed it *having seen it*: the line a
/// `replace` (or a save) dropped, the whole content of a file it deleted. To make "seen" exact,
/// every operation that reads and then writes or removes a file holds it open for writing from
/// before the read until after the change: the daemon applies no remote change to a file open
/// for writing (doc/SEMANTICS.md, "Remote changes"), so what was read is exactly what is changed.
/// A delete first renames the held file to a private name and checks it moved the node it read
/// (a remote entry may have taken the name meanwhile); a save-by-rename checks the name still
/// leads to the held file just before the rename and that the held file was the one replaced
/// (`blindReplacements` otherwise, which failure reports name).
final class ConvergenceWorker: @unchecked Sendable {
    let index: Int
    let label: String
    let root: String
    let seed: UInt64
    let opCount: Int
    let start: ContinuousClock.Instant
    private var random: SeededGenerator
    private let seedTag: String

    /// Tokens whose writing operation succeeded, with where they were written.
    private(set) var written: [String: TokenEvent] = [:]
    /// Every token this mount tried to write (also those of failed operations).
    private(set) var attempted: Set<String> = []
    /// Tokens this mount removed having read them, with where.
    private(set) var removed: [String: [TokenEvent]] = [:]
    /// Operations that read each token (its trail through the tree).
    private(set) var seen: [String: [TokenEvent]] = [:]
    /// Per operation kind, per outcome (`ok` or an errno name), how many.
    private(set) var outcomes: [ConvergenceOp: [String: Int]] = [:]
    /// Replacements by rename whose replaced file may not be the one read (see the type's note).
    private(set) var blindReplacements: [String] = []
    /// Names of save-by-rename temporaries this mount could not remove after a failed rename, and
    /// of files it could not delete after renaming them to their private name (their folder was
    /// moved away under them); the oracle accepts them.
    private(set) var strandedTemporaries: Set<String> = []
    private var nextToken = 0
    private var currentOp = 0

    init(index: Int, root: String, seed: UInt64, opCount: Int, start: ContinuousClock.Instant) {
        self.index = index
        self.label = MountGroup.label(index)
        self.root = root
        self.seed = seed
        self.opCount = opCount
        self.start = start
        random = SeededGenerator(seed: seed &* 0x2545_F491_4F6C_DD1D &+ UInt64(index + 1) &* 0x9E37_79B9_7F4A_7C15)
        seedTag = String(seed, radix: 16)
    }

    var succeeded: Int { outcomes.values.reduce(0) { $0 + ($1["ok"] ?? 0) } }

    /// Runs every operation, with random pauses.
    func run() {
        let kinds = ConvergenceOp.allCases
        let weights = kinds.map(\.weight)
        for op in 0..<opCount {
            currentOp = op
            let kind = kinds[random.weighted(weights)]
            let outcome: String
            do {
                try perform(kind)
                outcome = "ok"
            } catch let failure as OpFailure {
                outcome = failure.outcome
            } catch let error as PosixError {
                outcome = errnoName(error.code)
            } catch {
                outcome = "\(error)"
            }
            outcomes[kind, default: [:]][outcome, default: 0] += 1
            // Bursts of quick operations, with pauses that let changes travel (about 10 ms per
            // operation on average, so outages of seconds meet many of them).
            if random.chance(0.05) {
                usleep(UInt32(random.int(50_000...250_000)))
            } else if random.chance(0.5) {
                usleep(UInt32(random.int(200...4000)))
            }
        }
    }

    // MARK: - Operations

    /// Why an operation did nothing (no file to work on, lost a race): counted, not an error.
    private struct OpFailure: Error {
        var outcome: String
    }

    private func perform(_ kind: ConvergenceOp) throws {
        switch kind {
        case .create: try create()
        case .append: try append()
        case .insert: try edit(replacing: false)
        case .replace: try edit(replacing: true)
        case .saveByRename: try saveByRename()
        case .renameFile: try renameFile(move: false)
        case .moveFile: try renameFile(move: true)
        case .deleteFile: try deleteFile()
        case .mkdir: try makeFolder()
        case .rmdir: try removeFolder()
        case .moveDirectory: try moveFolder(rename: false)
        case .renameDirectory: try moveFolder(rename: true)
        }
    }

    private func create() throws {
        let path = join(randomDirectory(), "f\(random.below(6)).txt")
        let tokens = (0..<random.int(1...3)).map { _ in newToken() }
        let fd = try openFile(absolute(path), O_WRONLY | O_CREAT | O_EXCL)
        try writeAndClose(fd, lines(tokens))
        for token in tokens { written[token] = event(.create, path) }
    }

    private func append() throws {
        let path = try randomFile()
        let token = newToken()
        let fd = try openFile(absolute(path), O_WRONLY | O_APPEND)
        try writeAndClose(fd, lines([token]))
        written[token] = event(.append, path)
    }

    /// Insert (or replace) one line of a file held open for writing while it is read and rewritten.
    private func edit(replacing: Bool) throws {
        let kind: ConvergenceOp = replacing ? .replace : .insert
        let path = try randomFile()
        let fd = try openFile(absolute(path), O_RDWR)
        var closed = false
        defer { if !closed { close(fd) } }
        var content = try readLines(fd, kind, path)
        let token = newToken()
        if replacing {
            guard !content.isEmpty else { throw OpFailure(outcome: "empty") }
            let line = random.below(content.count)
            noteRemoved([content[line]], kind, path)
            content[line] = token
        } else {
            content.insert(token, at: random.below(content.count + 1))
        }
        let bytes = lines(content)
        try pwriteBytes(fd, bytes, offset: 0, what: "pwrite(\(path))")
        try posix("ftruncate(\(path))") { ftruncate(fd, off_t(bytes.count)) }
        closed = true
        try posix("close(\(path))") { close(fd) }
        written[token] = event(kind, path)
    }

    /// Writes the new content (one line added, perhaps one replaced) to a temporary file and
    /// renames it over the file, which is held open for writing from before it is read until
    /// after the rename.
    private func saveByRename() throws {
        let path = try randomFile()
        let hold = try openFile(absolute(path), O_RDWR)
        defer { close(hold) }
        var content = try readLines(hold, .saveByRename, path)
        var dropped: [String] = []
        if !content.isEmpty && random.chance(0.5) {
            dropped = [content.remove(at: random.below(content.count))]
        }
        let token = newToken()
        content.insert(token, at: random.below(content.count + 1))
        let temporary = join(parent(of: path), ".save-\(label)-\(currentOp)")
        let fd = try openFile(absolute(temporary), O_WRONLY | O_CREAT | O_EXCL)
        do {
            try writeAndClose(fd, lines(content))
            // The name must still lead to the file read (a remote entry may have taken it).
            guard try lstatPath(absolute(path)).st_ino == fstatFD(hold).st_ino else {
                throw OpFailure(outcome: "raced")
            }
            noteRemoved(dropped, .saveByRename, path)
            try posix("rename(\(temporary), \(path))") { rename(absolute(temporary), absolute(path)) }
        } catch {
            if unlink(absolute(temporary)) != 0 {
                // Its folder moved meanwhile (renamed aside by a conflict): the temporary stays
                // behind wherever the folder went, as it would for an editor.
                strandedTemporaries.insert(baseName(of: temporary))
            }
            throw error
        }
        written[token] = event(.saveByRename, path)
        if let links = try? linkCount(hold), links != 0 {
            blindReplacements.append(
                "\(event(.saveByRename, path)): the file read still has \(links) link(s) after the rename; "
                    + "the replaced file was another one")
        }
    }

    private func renameFile(move: Bool) throws {
        let path = try randomFile()
        let directory = move ? randomDirectory() : parent(of: path)
        let name = move && random.chance(0.5) ? baseName(of: path) : "f\(random.below(6)).txt"
        let target = join(directory, name)
        try posix("rename(\(path), \(target))") { Linux.renameat2(absolute(path), absolute(target), 1) }
    }

    /// Holds the file open for writing, reads it, renames it to a private name (checking the
    /// node moved is the one read) and unlinks it there.
    private func deleteFile() throws {
        let path = try randomFile()
        let hold = try openFile(absolute(path), O_RDWR)
        defer { close(hold) }
        let content = try readLines(hold, .deleteFile, path)
        let privateName = join(parent(of: path), ".delete-\(label)-\(currentOp)")
        try posix("rename(\(path), \(privateName))") { Linux.renameat2(absolute(path), absolute(privateName), 1) }
        do {
            guard try lstatPath(absolute(privateName)).st_ino == fstatFD(hold).st_ino else {
                // Another entry had taken the name: put it back (or beside), delete nothing.
                var placed = Linux.renameat2(absolute(privateName), absolute(path), 1) == 0
                var k = 0
                while !placed && k < 16 {
                    placed =
                        Linux.renameat2(absolute(privateName), absolute(join(parent(of: path), "f\(k).txt")), 1) == 0
                    k += 1
                }
                if !placed { strandedTemporaries.insert(baseName(of: privateName)) }
                throw OpFailure(outcome: "raced")
            }
            noteRemoved(content, .deleteFile, path)
            try posix("unlink(\(privateName))") { unlink(absolute(privateName)) }
        } catch let error as PosixError {
            // Its folder moved meanwhile (renamed aside by a conflict): the file stays behind
            // under its private name wherever the folder went, as with a save's temporary.
            strandedTemporaries.insert(baseName(of: privateName))
            throw error
        }
    }

    private func makeFolder() throws {
        var directory = randomDirectory()
        if directory.split(separator: "/").count >= 3 { directory = parent(of: directory) }
        let path = join(directory, "d\(random.below(4))")
        try makeDirectory(absolute(path))
    }

    private func removeFolder() throws {
        let directory = randomDirectory(minimumDepth: 1)
        guard !directory.isEmpty else { throw OpFailure(outcome: "nodir") }
        try posix("rmdir(\(directory))") { rmdir(absolute(directory)) }
    }

    private func moveFolder(rename: Bool) throws {
        let directory = randomDirectory(minimumDepth: 1)
        guard !directory.isEmpty else { throw OpFailure(outcome: "nodir") }
        let destination = rename ? parent(of: directory) : randomDirectory()
        let name = !rename && random.chance(0.5) ? baseName(of: directory) : "d\(random.below(4))"
        let target = join(destination, name)
        try posix("rename(\(directory), \(target))") { Linux.renameat2(absolute(directory), absolute(target), 1) }
    }

    // MARK: - Choosing paths

    /// A folder reached by a short random walk from the root ("" is the root).
    private func randomDirectory(minimumDepth: Int = 0) -> String {
        var directory = ""
        for depth in 0..<3 {
            if depth >= minimumDepth && random.chance(0.4) { break }
            let folders = names(in: directory).filter { $0.hasPrefix("d") }
            guard !folders.isEmpty else { break }
            directory = join(directory, random.pick(folders))
        }
        return directory
    }

    /// An existing file (a few folders are tried).
    private func randomFile() throws -> String {
        for _ in 0..<4 {
            let directory = randomDirectory()
            let files = names(in: directory).filter { $0.hasPrefix("f") }
            if !files.isEmpty { return join(directory, random.pick(files)) }
        }
        throw OpFailure(outcome: "nofile")
    }

    /// The names in a folder (sorted; names of private temporary files left out).
    private func names(in directory: String) -> [String] {
        ((try? listDirectory(absolute(directory))) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    // MARK: - Helpers

    private func newToken() -> String {
        nextToken += 1
        let token = "t\(seedTag)-\(label)-\(nextToken)"
        attempted.insert(token)
        return token
    }

    private func event(_ kind: ConvergenceOp, _ path: String) -> TokenEvent {
        TokenEvent(
            milliseconds: elapsedMilliseconds(since: start), mount: label, op: currentOp, kind: kind, path: path)
    }

    /// Reads the whole file from offset 0 and records every token seen.
    private func readLines(_ fd: Int32, _ kind: ConvergenceOp, _ path: String) throws -> [String] {
        guard lseek(fd, 0, SEEK_SET) == 0 else { throw PosixError(code: errno, operation: "lseek(\(path))") }
        let text = String(decoding: try readAll(fd, what: "read(\(path))"), as: UTF8.self)
        let content = text.split(separator: "\n").map(String.init)
        let seenAt = event(kind, path)
        for token in content { seen[token, default: []].append(seenAt) }
        return content
    }

    private func noteRemoved(_ tokens: [String], _ kind: ConvergenceOp, _ path: String) {
        let at = event(kind, path)
        for token in tokens { removed[token, default: []].append(at) }
    }

    private func writeAndClose(_ fd: Int32, _ bytes: [UInt8]) throws {
        do {
            try writeAll(fd, bytes)
        } catch {
            close(fd)
            throw error
        }
        try posix("close") { close(fd) }
    }

    /// The held file's link count (0 once it was unlinked or replaced).
    private func linkCount(_ fd: Int32) throws -> Int { Int(try fstatFD(fd).st_nlink) }

    private func lines(_ tokens: [String]) -> [UInt8] { Array(tokens.map { $0 + "\n" }.joined().utf8) }

    private func absolute(_ relative: String) -> String { relative.isEmpty ? root : root + "/" + relative }
}

func join(_ directory: String, _ name: String) -> String { directory.isEmpty ? name : directory + "/" + name }

func parent(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "" }
    return String(path[..<slash])
}

func baseName(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return path }
    return String(path[path.index(after: slash)...])
}
