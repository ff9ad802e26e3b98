import Foundation
import SyncBackend

/// What `restore` is asked to bring back (doc/CLI.md `restore`).
struct RestoreOrder: Sendable {
    enum Target: Sendable {
        /// A path below the mount point: a live entry, or else the newest deleted one that had it.
        case path(String)
        case fileID(FileID)
    }

    var target: Target
    /// The version to bring back; nil: a deleted entry's last state (a live entry needs one).
    var version: EntryVersion?
    /// Where to put it instead (a path below the mount point that does not exist).
    var destination: String?
}

/// `versions`, `trash` and `restore`: the container's history read through `HistoryReader`,
/// and restores made as ordinary commits of old states from this device — never a rewrite of
/// history. The follower then applies them like any remote change; a local change of the same
/// file not uploaded yet meets the restore as a conflict and is merged or kept beside it by
/// policy, never lost. Called from the control socket's threads (blocking container calls) and
/// by the mass-delete guard's `discard`. Uses only the container, its history and the tree.
final class HistoryService: Sendable {
    private let fileSystem: SyncFileSystem
    private let container: BlockingContainer
    private let history: HistoryReader
    /// Whether the follower is paused (`pause`): a restore then does not wait for it.
    private let followerPaused: @Sendable () -> Bool

    init(
        fileSystem: SyncFileSystem, container: BlockingContainer, history: HistoryReader,
        followerPaused: @escaping @Sendable () -> Bool = { false }
    ) {
        self.fileSystem = fileSystem
        self.container = container
        self.history = history
        self.followerPaused = followerPaused
    }

    /// How long `restore` waits for the follower to show what it committed.
    static let restoreApplyWait: Duration = .seconds(20)

    /// `versions PATH`: every kept version of the live entry at `path`, newest first.
    func versionsListing(path: String) throws(HistoryFailure) -> HistoryListing {
        let id = try liveFileID(at: path)
        let versions = try history.versions(of: id)
        guard !versions.isEmpty else {
            throw HistoryFailure("\(display(path)) is not in the container yet (it has no version there)")
        }
        let listed = versions.enumerated().map { index, version in
            let older = index + 1 < versions.count ? versions[index + 1].entry : nil
            return VersionListing(
                version: version.entry.version, committedAt: version.committedAt, replacedAt: version.replacedAt,
                kind: Self.kindName(version.entry.state.kind), size: version.entry.state.size,
                device: version.entry.device, deviceName: knownName(ofDevice: version.entry.device),
                change: VersionChange.between(older: older, newer: version.entry).rawValue,
                current: index == 0)
        }
        return HistoryListing(path: path, fileID: id.hex, versions: listed)
    }

    /// `trash`: the deleted entries the container keeps, each with what was deleted with it.
    func trashListing() throws(HistoryFailure) -> [TrashListing] {
        let index = try trashIndex()
        return index.items.map { item in
            let group = index.deletedTogether(with: item.entry.id)
            let state = item.entry.state
            return TrashListing(
                fileID: item.entry.id.hex, path: index.path(of: item.entry.id),
                name: String(decoding: state.name, as: UTF8.self), kind: Self.kindName(state.kind),
                version: item.entry.version, deletedAt: item.committedAt, device: item.entry.device,
                deviceName: knownName(ofDevice: item.entry.device), entries: group.count,
                bytes: group.reduce(0) { $0 + ($1.entry.state.kind == .file ? $1.entry.state.size : 0) })
        }
    }

    /// The name of the device `identity`, if this mount knows it: its own. Other devices' names
    /// are not in the container (its history holds device IDs only).
    private func knownName(ofDevice identity: String) -> String? {
        identity == fileSystem.deviceIdentity ? fileSystem.deviceName.text : nil
    }

    /// `restore`: one entry (and what was deleted with it) committed again; waits for the
    /// follower to show it.
    func restore(_ order: RestoreOrder) throws(HistoryFailure) -> RestoreReport {
        var report = RestoreReport()
        var index: TrashIndex?
        let newest = try restoreOne(order, trash: &index, into: &report)
        if newest > 0 { report.applied = waitUntilApplied(newest) }
        return report
    }

    /// Restores each of `orders` as `restore` does, reading the trash at most once and waiting
    /// once for the follower to show them all; one that fails is in `failures`, the others go on.
    func restoreEach(_ orders: [RestoreOrder]) -> (report: RestoreReport, failures: [HistoryFailure]) {
        var report = RestoreReport()
        var index: TrashIndex?
        var failures: [HistoryFailure] = []
        var newest: EntryVersion = 0
        for order in orders {
            do throws(HistoryFailure) {
                newest = max(newest, try restoreOne(order, trash: &index, into: &report))
            } catch {
                failures.append(error)
            }
        }
        if newest > 0 { report.applied = waitUntilApplied(newest) }
        return (report, failures)
    }

    /// One restore; `trash` is read the first time a deleted entry needs it. Returns the newest
    /// version it committed (0: none).
    private func restoreOne(_ order: RestoreOrder, trash: inout TrashIndex?, into report: inout RestoreReport)
        throws(HistoryFailure) -> EntryVersion
    {
        let liveID: FileID?
        switch order.target {
        case .path(let path): liveID = try? liveFileID(at: path)
        case .fileID(let id): liveID = fileSystem.displayPath(of: id) != nil ? id : nil
        }
        if let liveID { return try restoreLive(liveID, order, into: &report) }
        if trash == nil { trash = try trashIndex() }
        return try restoreDeleted(order, index: trash!, into: &report)
    }

    // MARK: Live entries

    private func restoreLive(_ id: FileID, _ order: RestoreOrder, into report: inout RestoreReport)
        throws(HistoryFailure)
        -> EntryVersion
    {
        let path = fileSystem.displayPath(of: id) ?? id.hex
        guard let wanted = order.version else {
            throw HistoryFailure(
                "\(display(path)) exists: name the version to bring back with --version (see `syncfs-mount versions`)")
        }
        let chosen = try keptVersion(wanted, of: id, path: path)
        if let destination = order.destination {
            let (parent, name) = try placement(destination)
            var state = chosen.state
            state.parent = parent
            state.name = name
            return try commitRestored(FileID.random(), base: 0, state: state, path: destination, into: &report)
        }
        for _ in 0..<3 {
            guard let current = try containerEntry(id), !current.isDeleted else {
                throw HistoryFailure("\(display(path)) is deleted in the container now; restore it from the trash")
            }
            if current.version == chosen.version {
                report.skipped.append(.init(path: path, reason: "version \(wanted) is already the current version"))
                return 0
            }
            guard current.state.kind == chosen.state.kind else {
                throw HistoryFailure("version \(wanted) of \(display(path)) is of another kind")
            }
            var state = current.state
            let old = chosen.state
            (state.mode, state.mtime, state.size, state.xattrs) = (old.mode, old.mtime, old.size, old.xattrs)
            (state.symlinkTarget, state.manifest) = (old.symlinkTarget, old.manifest)
            switch try commit(id, base: current.version, state: state) {
            case .committed(let entry):
                report.restored.append(path)
                return entry.version
            case .versionConflict:
                continue
            case let refusal:
                throw HistoryFailure("the container refused the restore of \(display(path)): \(Self.describe(refusal))")
            }
        }
        throw HistoryFailure("\(display(path)) kept changing in the container; try again", retryable: true)
    }

    // MARK: Deleted entries

    private func restoreDeleted(_ order: RestoreOrder, index: TrashIndex, into report: inout RestoreReport)
        throws(HistoryFailure) -> EntryVersion
    {
        let tombstone: HistoricVersion
        switch order.target {
        case .path(let path):
            guard let found = index.entry(atPath: Self.normalized(path)) else {
                throw HistoryFailure(
                    "\(display(path)): no such file or directory, and nothing by that path in the trash")
            }
            tombstone = found
        case .fileID(let id):
            guard let found = index.byID[id] else {
                throw HistoryFailure("no entry \(id.hex) in this mount or in the trash")
            }
            tombstone = found
        }
        let id = tombstone.entry.id
        let path = order.destination ?? index.path(of: id) ?? id.hex
        var state = tombstone.entry.state
        if let wanted = order.version, wanted != tombstone.entry.version {
            state = try keptVersion(wanted, of: id, path: path).state
        }
        var newest: EntryVersion = 0
        if let destination = order.destination {
            (state.parent, state.name) = try placement(destination)
        } else if let parent = state.parent, parent != .root, fileSystem.displayPath(of: parent) == nil {
            // Its folder was deleted too (not with it): bring the folders above back first, alone.
            newest = try restoreAncestors(of: parent, index: index, into: &report)
        }
        let restored = try commitRestored(id, base: tombstone.entry.version, state: state, path: path, into: &report)
        guard restored > 0 else { return newest }
        newest = max(newest, restored)
        for member in index.deletedTogether(with: id).dropFirst() {
            let memberPath = index.path(of: member.entry.id) ?? member.entry.id.hex
            do throws(HistoryFailure) {
                let version = try commitRestored(
                    member.entry.id, base: member.entry.version, state: member.entry.state, path: memberPath,
                    into: &report)
                newest = max(newest, version)
            } catch {
                report.skipped.append(.init(path: memberPath, reason: error.description))
            }
        }
        return newest
    }

    private func restoreAncestors(of folder: FileID, index: TrashIndex, into report: inout RestoreReport)
        throws(HistoryFailure) -> EntryVersion
    {
        var chain: [HistoricVersion] = []
        var current: FileID? = folder
        while let id = current, id != .root, fileSystem.displayPath(of: id) == nil {
            guard let tombstone = index.byID[id], chain.count < 4096 else {
                throw HistoryFailure(
                    "a folder it was in is gone for good; bring it back elsewhere with --to PATH")
            }
            chain.append(tombstone)
            current = tombstone.entry.state.parent
        }
        var newest: EntryVersion = 0
        for ancestor in chain.reversed() {
            let path = index.path(of: ancestor.entry.id) ?? ancestor.entry.id.hex
            let version = try commitRestored(
                ancestor.entry.id, base: ancestor.entry.version, state: ancestor.entry.state, path: path, into: &report)
            guard version > 0 else { throw HistoryFailure("cannot bring back the folder \(display(path))") }
            newest = max(newest, version)
        }
        return newest
    }

    // MARK: Pieces

    /// Commits `state` as the next version of `id`; the new version, or 0 with the reason in `skipped`.
    private func commitRestored(
        _ id: FileID, base: EntryVersion, state: EntryState, path: String, into report: inout RestoreReport
    ) throws(HistoryFailure) -> EntryVersion {
        switch try commit(id, base: base, state: state) {
        case .committed(let entry):
            report.restored.append(path)
            return entry.version
        case .nameTaken:
            report.skipped.append(.init(path: path, reason: "the name is taken now; bring it back elsewhere with --to"))
        case let refusal:
            report.skipped.append(.init(path: path, reason: Self.describe(refusal)))
        }
        return 0
    }

    private func commit(_ id: FileID, base: EntryVersion, state: EntryState) throws(HistoryFailure) -> CommitOutcome {
        do throws(SyncFailure) {
            return try container.commit(
                CommitRequest(id: id, baseVersion: base, change: .put(state), device: fileSystem.deviceIdentity))
        } catch {
            throw HistoryFailure(error)
        }
    }

    private func containerEntry(_ id: FileID) throws(HistoryFailure) -> RemoteEntry? {
        do throws(SyncFailure) { return try container.entry(id) } catch { throw HistoryFailure(error) }
    }

    private func keptVersion(_ wanted: EntryVersion, of id: FileID, path: String) throws(HistoryFailure) -> RemoteEntry
    {
        guard let found = try history.versions(of: id).first(where: { $0.entry.version == wanted }) else {
            throw HistoryFailure(
                "version \(wanted) of \(display(path)) is not kept (see `syncfs-mount versions`)")
        }
        guard !found.entry.isDeleted else {
            throw HistoryFailure("version \(wanted) of \(display(path)) is its deletion; name a version before it")
        }
        return found.entry
    }

    /// The parent's file ID and the name for a new place `destination`, which must not exist and
    /// whose folder must be a directory the container has.
    private func placement(_ destination: String) throws(HistoryFailure) -> (FileID, [UInt8]) {
        let normalized = Self.normalized(destination)
        var components = normalized.split(separator: "/").map(String.init)
        guard let name = components.popLast(), name != "..", name != "." else {
            throw HistoryFailure("--to needs a new path inside the mount, not \(display(destination))")
        }
        if (try? fileSystem.lookup(path: normalized)) != nil {
            throw HistoryFailure("\(display(destination)) exists; --to needs a path that does not")
        }
        let folder = components.joined(separator: "/")
        guard let parent = try? liveFileID(at: folder, allowRoot: true) else {
            throw HistoryFailure("the folder of \(display(destination)) does not exist")
        }
        do throws(ContainerProtocolError) {
            try EntryStateRules.checkName(Array(name.utf8))
        } catch {
            throw HistoryFailure("\(display(destination)): \(error)")
        }
        return (parent, Array(name.utf8))
    }

    private func liveFileID(at path: String, allowRoot: Bool = false) throws(HistoryFailure) -> FileID {
        let id: FileID
        do throws(FSError) {
            let ino = try fileSystem.lookup(path: path)
            id = try fileSystem.live.transact { tree throws(FSError) in try tree.node(ino).fileID }
        } catch {
            throw HistoryFailure(error == .notFound ? "\(display(path)): no such file or directory" : "\(error)")
        }
        guard allowRoot || id != .root else { throw HistoryFailure("the mount's root has no versions to list") }
        return id
    }

    private func trashIndex() throws(HistoryFailure) -> TrashIndex {
        TrashIndex(try history.trash(), livePath: fileSystem.displayPath(of:))
    }

    /// Waits (at most `timeout`) until the follower is done with `version`
    /// (`LiveTree.feedHandled`, not `feedReached`, which moves when the follower begins an
    /// entry): applied, the kernel's caches dropped — or deferred, when a local change of the
    /// entry waits to upload and will meet the restored version as a conflict. Returns as soon
    /// as the follower gets there (it signals each entry it is done with); false on a timeout.
    /// A paused follower gets there only after `resume`: false at once.
    func waitUntilApplied(_ version: EntryVersion, within timeout: Duration = restoreApplyWait) -> Bool {
        if followerPaused() { return false }
        return fileSystem.live.feedHandled.wait(forAtLeast: version, within: timeout)
    }

    private func display(_ path: String) -> String { path.isEmpty ? "the mount's root" : path }

    private static func normalized(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }.joined(separator: "/")
    }

    static func kindName(_ kind: NodeKind) -> String {
        switch kind {
        case .file: return "file"
        case .directory: return "directory"
        case .symlink: return "symlink"
        }
    }

    private static func describe(_ outcome: CommitOutcome) -> String {
        switch outcome {
        case .committed: return "committed"
        case .versionConflict: return "it changed in the container meanwhile; try again"
        case .nameTaken: return "the name is taken now; bring it back elsewhere with --to"
        case .parentMissing: return "its folder is not in the container (not uploaded yet, or deleted)"
        case .directoryNotEmpty: return "a folder with entries cannot become a file"
        case .wouldCreateCycle: return "it would put a folder inside itself"
        case .chunksMissing(let hashes):
            return "\(hashes.count) chunks of that version are gone from the container (collected)"
        }
    }
}
