/// Which paths of a folder stay local: the patterns of the built-in defaults, of the synced
/// `.syncfs-ignore` files (any folder) and of the mount's local ignore file, in gitignore syntax.
///
/// Precedence, highest first: the local file; then the synced files, the deepest folder first;
/// then the defaults. Within one file the last matching line decides. A path below an ignored
/// folder is ignored whatever the patterns say of it (git's rule: a file cannot be re-included
/// when a parent folder is excluded).
public struct IgnoreRules: Sendable {
    /// The name of a synced ignore file, in any folder.
    public static let syncedFileName = ".syncfs-ignore"

    /// The rules that ignore nothing.
    public static let none = IgnoreRules(defaults: false, synced: [:], local: nil)

    let defaults: IgnoreFile?
    /// By folder: "" for the root, "a/b" for a folder below it.
    let synced: [String: IgnoreFile]
    let local: IgnoreFile?
    /// Whether some synced file sits at a depth (0: the root), by depth.
    private let syncedAtDepth: [Bool]

    public init(defaults: Bool, synced: [String: IgnoreFile], local: IgnoreFile?) {
        self.defaults = defaults ? IgnoreFile.defaults : nil
        var byFolder: [String: IgnoreFile] = [:]
        for (folder, file) in synced {
            byFolder[folder.split(separator: "/").joined(separator: "/")] = file
        }
        var syncedAtDepth: [Bool] = []
        for folder in byFolder.keys {
            let depth = folder.isEmpty ? 0 : folder.utf8.count { $0 == UInt8(ascii: "/") } + 1
            if syncedAtDepth.count <= depth {
                syncedAtDepth += repeatElement(false, count: depth + 1 - syncedAtDepth.count)
            }
            syncedAtDepth[depth] = true
        }
        self.synced = byFolder
        self.syncedAtDepth = syncedAtDepth
        self.local = local
    }

    /// Whether `path` is ignored (see `match`).
    public func isIgnored(_ path: String, isDirectory: Bool) -> Bool {
        match(path, isDirectory: isDirectory)?.ignored ?? false
    }

    /// The line that decides `path` ("/"-separated, relative to the folder's root, no leading
    /// "/"), or nil when no line matches it. For a path below an ignored folder, the folder's
    /// match.
    ///
    /// Names are compared byte for byte (no Unicode normalization, case-sensitive). A match
    /// takes time at most proportional to the path's length times the length of the lines of
    /// the files that apply to it, and memory proportional to the path's length and the
    /// longest line (`IgnoreFile.maximumPatternLength`).
    public func match(_ path: String, isDirectory: Bool) -> IgnoreMatch? {
        var work = 0
        return match(path, isDirectory: isDirectory, work: &work)
    }

    /// `match`, adding the matcher's steps to `work`.
    func match(_ path: String, isDirectory: Bool, work: inout Int) -> IgnoreMatch? {
        var path = path
        let tidyMatch = path.withUTF8 { bytes -> IgnoreMatch?? in
            // One pass: the components' count, and whether there is an empty one.
            var depth = 1
            var previous = UInt8(ascii: "/")
            for byte in bytes {
                if byte == UInt8(ascii: "/") {
                    guard previous != byte else { return .none }
                    depth += 1
                }
                previous = byte
            }
            guard previous != UInt8(ascii: "/") else { return .none }
            return withUnsafeTemporaryAllocation(of: Int.self, capacity: depth) { ends in
                var component = 0
                for (offset, byte) in bytes.enumerated() where byte == UInt8(ascii: "/") {
                    ends[component] = offset
                    component += 1
                }
                ends[component] = bytes.count
                let path = IgnorePath(bytes: bytes, ends: UnsafeBufferPointer(ends))
                return .some(decide(path, isDirectory: isDirectory, work: &work))
            }
        }
        if let tidyMatch { return tidyMatch }
        let tidy = path.split(separator: "/").joined(separator: "/")
        return tidy.isEmpty ? nil : match(tidy, isDirectory: isDirectory, work: &work)
    }

    /// Offers the files that apply to `path` to a decision, highest precedence first.
    private func decide(_ path: IgnorePath, isDirectory: Bool, work: inout Int) -> IgnoreMatch? {
        withUnsafeTemporaryAllocation(of: Bool.self, capacity: path.depth + 1) { decided in
            decided.initialize(repeating: false)
            var decision = IgnoreDecision(path: path, isDirectory: isDirectory, decided: decided)
            offerFiles(to: &decision, work: &work)
            return decision.result
        }
    }

    private func offerFiles(to decision: inout IgnoreDecision, work: inout Int) {
        let path = decision.path
        if let local { decision.offer(local, source: .local, folderDepth: 0, work: &work) }
        var folderDepth = min(path.depth - 1, syncedAtDepth.count - 1)
        while folderDepth >= 0 && !decision.isComplete {
            if syncedAtDepth[folderDepth] {
                let folder =
                    folderDepth == 0
                    ? "" : String(decoding: path.bytes[..<path.ends[folderDepth - 1]], as: UTF8.self)
                if let file = synced[folder] {
                    decision.offer(file, source: .synced(folder: folder), folderDepth: folderDepth, work: &work)
                }
            }
            folderDepth -= 1
        }
        if let defaults { decision.offer(defaults, source: .defaults, folderDepth: 0, work: &work) }
    }
}

/// Where an ignore line comes from.
public enum IgnoreSource: Hashable, Sendable, Codable {
    /// The built-in list (`IgnoreFile.defaultPatterns`).
    case defaults
    /// The synced `.syncfs-ignore` of `folder` ("" for the root).
    case synced(folder: String)
    /// The mount's local ignore file (never synced).
    case local
}

/// The line that decided a path.
public struct IgnoreMatch: Sendable, Equatable {
    /// False when the deciding line is a `!` line: the path is not ignored.
    public var ignored: Bool
    public var source: IgnoreSource
    /// 1-based line of the file (of `IgnoreFile.defaultPatterns` for the defaults).
    public var line: Int
    /// The line as written.
    public var pattern: String
}
