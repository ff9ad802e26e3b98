import Synchronization

/// Whether a READDIRPLUS page carries each entry's attributes or only its name and type
/// (doc/performance-log.md "Names-only listings").
///
/// Every directory read is a READDIRPLUS (`KernelCachePolicy.readdirPlusAlways`). With
/// attributes, the kernel makes a dentry and an inode for every entry — what a walk that stats
/// every name (`ls -lR`, `du`) needs, and pure cost for one that needs names and types only
/// (`find`, `os.walk`, indexers): a cold `find` spent most of its time instantiating entries it
/// never used. Without attributes (entry node ID 0) the kernel only copies the name out; a later
/// `stat` of it is one LOOKUP.
///
/// The decision is per reader (the calling thread's ID, as the kernel gives it): a reader starts
/// with names only; once it looks up a non-directory in a directory it was given names only for
/// — it stats what it lists — its later pages carry attributes. A walker that only descends
/// looks up directories alone and keeps getting names only. So a reader that stats pays LOOKUPs
/// for its first directory only.
///
/// Safe either way: a names-only entry is never counted as a lookup (the kernel does not
/// instantiate it, so no FORGET comes), and the name and type are the same the attributes would
/// give. Only speed depends on the guess.
struct ReaddirPlusReaders: Sendable {
    /// Readers remembered at most (threads that listed recently); past it the least recently seen
    /// half is forgotten (they start again with names only).
    static let capacity = 1024
    /// Directories given names only that a reader's lookups are matched against, most recent
    /// last (a walker lists one directory, then works in it).
    static let recentDirectories = 8

    struct Reader: Sendable {
        var wantsAttributes = false
        var namesOnlyDirectories: [UInt64] = []
        var lastSeen: UInt64 = 0
    }

    private(set) var readers: [Int32: Reader] = [:]
    private var clock: UInt64 = 0

    /// Whether the page `reader` asked for of `directory` carries attributes; a names-only answer
    /// is remembered for `lookedUp`. Reader 0 (a request the kernel makes on no process's
    /// behalf) always gets attributes.
    mutating func attributesWanted(by reader: Int32, listing directory: UInt64) -> Bool {
        guard reader != 0 else { return true }
        clock += 1
        var state = readers[reader] ?? Reader()
        state.lastSeen = clock
        if !state.wantsAttributes && state.namesOnlyDirectories.last != directory {
            state.namesOnlyDirectories.removeAll { $0 == directory }
            state.namesOnlyDirectories.append(directory)
            if state.namesOnlyDirectories.count > Self.recentDirectories {
                state.namesOnlyDirectories.removeFirst(state.namesOnlyDirectories.count - Self.recentDirectories)
            }
        }
        if readers[reader] == nil && readers.count >= Self.capacity { forgetLeastRecentHalf() }
        readers[reader] = state
        return state.wantsAttributes
    }

    /// `reader` looked up a name in `directory` that is a directory (`isDirectory`) or not.
    mutating func lookedUp(by reader: Int32, in directory: UInt64, isDirectory: Bool) {
        guard !isDirectory, var state = readers[reader], !state.wantsAttributes,
            state.namesOnlyDirectories.contains(directory)
        else { return }
        state.wantsAttributes = true
        state.namesOnlyDirectories = []
        readers[reader] = state
    }

    private mutating func forgetLeastRecentHalf() {
        let kept = readers.sorted { $0.value.lastSeen > $1.value.lastSeen }.prefix(Self.capacity / 2)
        readers = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
    }
}

/// `ReaddirPlusReaders` behind a lock, for the FUSE threads.
final class ReaddirPlusAdvisor: Sendable {
    private let readers = Mutex(ReaddirPlusReaders())

    func attributesWanted(by reader: Int32, listing directory: UInt64) -> Bool {
        readers.withLock { $0.attributesWanted(by: reader, listing: directory) }
    }

    func lookedUp(by reader: Int32, in directory: UInt64, isDirectory: Bool) {
        readers.withLock { $0.lookedUp(by: reader, in: directory, isDirectory: isDirectory) }
    }
}
