import Glibc
import Logging
import SyncBackend
import SyncMerge

/// How the content of a file changed on both sides ends up (see `ContentMerger.mergeContent`).
enum ContentResolution {
    /// The local content, as it is.
    case ours
    /// The container's content.
    case theirs
    /// New content made from both: a complete temporary file. `markers`: it holds conflict markers.
    case merged(path: String, markers: Bool)
    /// The local content goes to a conflict copy; the file takes the container's content.
    case keepBoth(reason: String)
    /// A merge command runs for it (`MergeCommandWorker`); the item was handed back to the queue.
    case waiting
}

/// The uploader's merges: a local entry made the merged state of both sides (`adopt`), and
/// content changed on both sides made one by the path's merge policy (`mergeContent`), with a
/// conflict copy where the policy keeps both. Each returns what the uploader does next.
final class ContentMerger: Sendable {
    /// The largest file merged by content (text, json, union, command); larger ones keep both.
    static let largestMergedFile: Int64 = 64 << 20

    let fileSystem: SyncFileSystem
    private let conflicts: Conflicts
    private let remote: RemoteChanges
    private let container: BlockingContainer
    private let transfer: ContentTransfer
    private let applier: RemoteApplier
    private let remoteWins: RemoteWins
    private let rules: RulesChecker
    let mergeWorker: MergeCommandWorker
    let mergeCommands: LocalMergeCommands
    private let progress: EngineProgress
    private let log: EngineLog
    var logger: Logger { log.logger }

    init(
        fileSystem: SyncFileSystem, conflicts: Conflicts, remote: RemoteChanges, container: BlockingContainer,
        transfer: ContentTransfer, applier: RemoteApplier, remoteWins: RemoteWins, rules: RulesChecker,
        mergeCommands: LocalMergeCommands, progress: EngineProgress, log: EngineLog
    ) {
        self.fileSystem = fileSystem
        self.conflicts = conflicts
        self.remote = remote
        self.container = container
        self.transfer = transfer
        self.applier = applier
        self.remoteWins = remoteWins
        self.rules = rules
        mergeWorker = MergeCommandWorker(outbox: fileSystem.outbox)
        self.mergeCommands = mergeCommands
        self.progress = progress
        self.log = log
    }

    /// Makes the local entry the merged state and tries the commit again on top of `current`
    /// (`.again`), or postpones the item if the local file is busy (`.done`). The
    /// content is `contentFile` if given; otherwise the local content when the merged manifest is
    /// ours, else the container's (downloaded first, unless the file is a placeholder).
    func adopt(
        _ merged: EntryState, for item: OutboxItem, current: RemoteEntry, local: MergeLocalContent?,
        oursManifest: [ChunkRef]? = nil, contentFile: String? = nil, event: ChangeEvent.Kind? = nil
    ) throws(SyncFailure) -> UploadStep {
        try restoreParent(of: merged)
        var contentFile = contentFile
        var downloaded: String?
        defer { if let downloaded { unlink(downloaded) } }
        var local = local
        if contentFile == nil, merged.kind == .file, merged.manifest != oursManifest,
            !conflicts.isPlaceholder(item.fileID)
        {
            // The file's content is here and must become the container's (never adopt the
            // merged metadata over the old bytes: the next commit would revert the remote edit).
            guard let holder = local ?? conflicts.localContentForMerge(item.fileID) else {
                fileSystem.outbox.postpone(item, by: EngineDelay.localEntryBusy)
                return .done
            }
            local = holder
            downloaded = try download(merged.manifest, reusing: holder, manifest: oursManifest ?? [])
            contentFile = downloaded
        }
        guard
            conflicts.adoptMerged(
                item.fileID, state: merged, onto: current, contentFile: contentFile, local: local, item: item,
                event: event)
        else {
            fileSystem.outbox.postpone(item, by: EngineDelay.localEntryBusy)
            return .done
        }
        return .again
    }

    /// Both sides changed the content of a file: the merge policy of its path decides
    /// (`.syncfs-rules`, doc/SEMANTICS.md "Merge policies and the rules file"), the rest of the
    /// entry is `merged`. Returns like `adopt` (`.done` also while a merge command runs).
    func mergeContent(
        item: OutboxItem, ours: EntryState, merged: EntryState, current: RemoteEntry, baseManifest: [ChunkRef]?
    ) throws(SyncFailure) -> UploadStep {
        guard let local = conflicts.localContentForMerge(item.fileID) else {
            fileSystem.outbox.postpone(item, by: EngineDelay.localEntryBusy)
            return .done
        }
        let path = fileSystem.displayPath(of: item.fileID) ?? item.fileID.hex
        var temporaries: [String] = []
        defer { for file in temporaries { unlink(file) } }
        let mergeStarted = fileSystem.outbox.now
        let resolution = try resolveContent(
            path: path, item: item, ours: ours, theirs: current, local: local, baseManifest: baseManifest ?? [],
            temporaries: &temporaries)
        log.logMerge(item.fileID, ours: ours, theirs: current, started: mergeStarted)
        var state = merged
        switch resolution {
        case .waiting:
            return .done
        case .ours:
            state.manifest = ours.manifest
            state.size = ours.size
            logger.notice("conflict on \(path): kept the local version (policy)")
            return try adopt(state, for: item, current: current, local: local, oursManifest: ours.manifest)
        case .theirs:
            logger.notice("conflict on \(path): took the container's version (policy)")
            return try takeTheirs(state, item: item, current: current, local: local, ours: ours)
        case .merged(let file, let markers):
            logger.notice("conflict on \(path): merged both versions\(markers ? " with conflict markers" : "")")
            if markers {
                // The mark goes with the merged content, in the same commit.
                state.xattrs[ConflictNote.attribute] = ConflictNote.encoded(
                    of: item.fileID, host: fileSystem.deviceName,
                    reason: "both changed the same lines; conflict markers written",
                    now: Clock.nowNanoseconds())
            }
            return try adopt(
                state, for: item, current: current, local: local, oursManifest: ours.manifest, contentFile: file,
                event: markers ? .conflict : .merged)
        case .keepBoth(let reason):
            // Everything that can fail comes first (the folder, the container's version), so a
            // copy is made only when the file can take that version right after — else every
            // retry would leave another copy.
            try restoreParent(of: state)
            var theirs = state
            theirs.manifest = current.state.manifest
            theirs.size = current.state.size
            let theirsFile = try download(current.state.manifest, reusing: local, manifest: ours.manifest)
            temporaries.append(theirsFile)
            guard conflicts.canAdopt(item.fileID, state: theirs, item: item),
                let copy = conflicts.forkConflictCopy(item.fileID, local: local, reason: reason)
            else {
                fileSystem.outbox.postpone(item, by: EngineDelay.localEntryBusy)
                return .done
            }
            // The copy must be on disk before the file's own bytes are replaced.
            conflicts.persistNow()
            logger.notice("conflict on \(path): \(reason); the local version was kept as \(copy)")
            return try adopt(
                theirs, for: item, current: current, local: nil, oursManifest: ours.manifest, contentFile: theirsFile)
        }
    }

    /// A merged entry whose folder was deleted here (its delete still queued, and refused by the
    /// container because of this very entry) brings the folder back: the delete loses, as a
    /// directory delete does against entries added to it on the other side.
    func restoreParent(of state: EntryState) throws(SyncFailure) {
        guard let parent = state.parent, !conflicts.hasLiveDirectory(parent),
            let remote = try container.entry(parent), !remote.isDeleted
        else { return }
        logger.notice("the folder \(parent) deleted here holds a changed entry in the container; it comes back")
        _ = try applier.apply(remote, force: true)
    }

    /// The file takes the container's content (and the merged metadata).
    private func takeTheirs(
        _ state: EntryState, item: OutboxItem, current: RemoteEntry, local: MergeLocalContent?, ours: EntryState
    ) throws(SyncFailure) -> UploadStep {
        var state = state
        state.manifest = current.state.manifest
        state.size = current.state.size
        if state == current.state {
            try remoteWins.take(current, replacing: item)
            return .done
        }
        return try adopt(state, for: item, current: current, local: local, oursManifest: ours.manifest)
    }

    /// Runs the path's chain of policies on the three versions: the first step that decides
    /// makes the resolution; when every step falls through, both versions are kept, the reasons
    /// of the steps in the conflict copy's note. The bytes are read once, when a step first needs
    /// them; a merge command's step may answer `.waiting` (walked again from the start when its
    /// command ends: the steps before it fall through the same way on the same versions).
    private func resolveContent(
        path: String, item: OutboxItem, ours: EntryState, theirs current: RemoteEntry, local: MergeLocalContent,
        baseManifest: [ChunkRef], temporaries: inout [String]
    ) throws(SyncFailure) -> ContentResolution {
        let theirs = current.state
        let chain = try rules.rulesForMerge().chain(forPath: path)
        let sizes = [ours.size, theirs.size, baseManifest.reduce(0) { $0 + $1.length }]
        let readable = sizes.allSatisfy { $0 <= Self.largestMergedFile }
        var versions = MergeVersions(
            localSize: ours.size, remoteSize: theirs.size, localModified: ours.mtime, remoteModified: theirs.mtime)
        var answered: ContentResolution?
        let outcome = try chain.decide { step throws(SyncFailure) -> MergeStepOutcome? in
            let outcome: MergeStepOutcome
            if case .command(let name, let ruleTimeout) = step {
                guard readable else { return .fallThrough("both changed the content; too large to merge") }
                // On the merge worker, off the upload path (ContentMerger+Command.swift).
                let resolution = try commandResolution(
                    name: name, ruleTimeout: ruleTimeout, path: path, item: item, ours: ours, theirs: current,
                    local: local, read: versions.content, baseManifest: baseManifest, temporaries: &temporaries)
                guard case .keepBoth(let reason) = resolution else {
                    answered = resolution
                    return nil
                }
                outcome = .fallThrough(reason)
            } else {
                if step.needsContent, readable, versions.content == nil {
                    let read = try readSides(local: local, ours: ours, theirs: theirs, baseManifest: baseManifest)
                    versions.content = MergeVersions.Content(base: read.base, local: read.local, remote: read.remote)
                }
                outcome = step.decide(versions)
            }
            if case .fallThrough(let reason) = outcome, step != chain.steps.last {
                logger.info("conflict on \(path): \(Self.quotedForDisplay(step.description)) did not decide: \(reason)")
            }
            return outcome
        }
        switch outcome {
        case nil: return answered ?? .waiting
        case .local: return .ours
        case .remote: return .theirs
        case .keepBoth(let reason): return .keepBoth(reason: reason)
        case .merged(let bytes, let markers):
            let file = remote.temporaryContentPath()
            temporaries.append(file)
            try Self.writeSynced(bytes, to: file)
            return .merged(path: file, markers: markers)
        }
    }

    /// A name from the synced rules, for a message: quoted, at most 80 characters, one line.
    static func quotedForDisplay(_ name: String) -> String {
        let line = name.map { $0.isNewline || $0.asciiValue.map { $0 < 0x20 } == true ? " " : String($0) }.joined()
        return "\"" + (line.count > 80 ? line.prefix(79) + "…" : line) + "\""
    }

    /// Runs an allowed command in a private workspace (`MergeWorkspace`) as `identity`; its
    /// result (`%A`) is copied into a temporary file of the daemon's own.
    func runMergeCommand(
        _ definition: MergeCommandTable.Definition, timeout: Int, path: String,
        sides: (base: [UInt8], local: [UInt8], remote: [UInt8]), identity: MergeIdentity,
        temporaries: inout [String]
    ) throws(SyncFailure) -> ContentResolution {
        let daemonTemporary = remote.temporaryContentPath()
        // A command of another user cannot reach the state directory (0700): it works below /tmp.
        let parent =
            identity.switchTo == nil
            ? String(daemonTemporary[..<(daemonTemporary.lastIndex(of: "/") ?? daemonTemporary.endIndex)]) : "/tmp"
        let workspace: MergeWorkspace
        var files: [String] = []
        do {
            workspace = try MergeWorkspace(parent: parent, owner: identity.switchTo)
        } catch {
            throw .local("cannot prepare the merge command: \(error.message)")
        }
        defer { workspace.remove() }
        do {
            for (name, bytes) in [("base", sides.base), ("local", sides.local), ("remote", sides.remote)] {
                files.append(try workspace.write(name, bytes))
            }
        } catch {
            throw .local("cannot prepare the merge command: \(error.message)")
        }
        let line = MergeCommand.commandLine(
            definition.template, base: files[0], local: files[1], remote: files[2], path: path)
        let result = MergeCommand.run(
            line, timeoutSeconds: timeout, workingDirectory: workspace.path, identity: identity)
        guard result.merged else {
            let reason = result.reason ?? "it failed"
            logger.notice("the merge command \(definition.name) for \(path) did not merge: \(reason)")
            return .keepBoth(reason: "the merge command \(definition.name) did not merge: \(reason)")
        }
        let merged: [UInt8]
        do {
            merged = try workspace.read("local", limit: Int(Self.largestMergedFile))
        } catch {
            logger.notice("the merge command \(definition.name) for \(path): \(error.message)")
            return .keepBoth(reason: error.message)
        }
        temporaries.append(daemonTemporary)
        try Self.writeSynced(merged, to: daemonTemporary)
        return .merged(path: daemonTemporary, markers: false)
    }

    /// The base, local and remote content, whole, in memory (each at most `largestMergedFile`).
    func readSides(local: MergeLocalContent, ours: EntryState, theirs: EntryState, baseManifest: [ChunkRef])
        throws(SyncFailure) -> (base: [UInt8], local: [UInt8], remote: [UInt8])
    {
        let localBytes = try Self.readWhole(local.path)
        func fetch(_ manifest: [ChunkRef]) throws(SyncFailure) -> [UInt8] {
            if manifest.isEmpty { return [] }
            let file = try download(manifest, reusing: local, manifest: ours.manifest)
            defer { unlink(file) }
            return try Self.readWhole(file)
        }
        return (try fetch(baseManifest), localBytes, try fetch(theirs.manifest))
    }

    /// Downloads `manifest` into a new temporary file (reusing chunks of the local content).
    func download(_ manifest: [ChunkRef], reusing local: MergeLocalContent?, manifest localManifest: [ChunkRef])
        throws(SyncFailure) -> String
    {
        let file = remote.temporaryContentPath()
        var totals = ContentTransfer.Totals()
        defer { progress.add(totals) }
        do {
            try transfer.download(
                manifest, to: file, local: local?.path, localManifest: local == nil ? [] : localManifest,
                totals: &totals)
        } catch {
            unlink(file)
            throw error
        }
        return file
    }

    static func readWhole(_ path: String) throws(SyncFailure) -> [UInt8] {
        switch LocalFileIO.readAll(path) {
        case .success(let bytes): return bytes
        case .failure(let error): throw .local("cannot read \(path): \(LocalFileIO.errorText(error.code))")
        }
    }

    static func writeSynced(_ bytes: [UInt8], to path: String) throws(SyncFailure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .local("cannot create \(path): \(LocalFileIO.errorText(errno))") }
        defer { close(fd) }
        if let code = LocalFileIO.writeAll(fd, bytes) {
            throw .local("cannot write \(path): \(LocalFileIO.errorText(code))")
        }
        guard fsync(fd) == 0 else { throw .local("cannot sync \(path): \(LocalFileIO.errorText(errno))") }
    }
}
