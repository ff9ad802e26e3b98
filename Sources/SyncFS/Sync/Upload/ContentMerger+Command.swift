import Glibc
import SyncBackend
import SyncMerge

/// `merge=command:` merges on the merge worker (`MergeCommandWorker`), off the upload path.
extension ContentMerger {
    /// The outcome of the file's command merge, or `.waiting` while its command runs (the item is
    /// then parked in the queue until the command ends). A refused or failed command answers
    /// `.keepBoth` (the chain's next step decides). `read`: the three versions if already read
    /// (else they are read when the command is to start).
    func commandResolution(
        name: String, ruleTimeout: Int?, path: String, item: OutboxItem, ours: EntryState, theirs current: RemoteEntry,
        local: MergeLocalContent, read: MergeVersions.Content?, baseManifest: [ChunkRef], temporaries: inout [String]
    ) throws(SyncFailure) -> ContentResolution {
        let definition: MergeCommandTable.Definition
        switch mergeCommands.lookup(name, logger: logger) {
        case .refused(let why):
            let reason = "merge=command:\(Self.quotedForDisplay(name)) is not allowed on this machine: \(why)"
            mergeCommands.once("refused \(path)\u{0}\(reason)") {
                logger.warning("merge command refused for \(path): \(reason); both versions are kept")
            }
            return .keepBoth(reason: reason)
        case .allowed(let allowed): definition = allowed
        }
        let timeout = definition.effectiveTimeout(rule: ruleTimeout)
        let inputs = MergeCommandWorker.Inputs(
            command: definition.name + "\u{0}" + definition.template + "\u{0}\(timeout)", path: path,
            theirsVersion: current.version, ours: ours.manifest, theirs: current.state.manifest, base: baseManifest)
        // Parked for longer than the command may run: its end wakes the item (`Outbox.expedite`).
        let outbox = fileSystem.outbox
        let park = { outbox.postpone(item, by: .seconds(timeout) + EngineDelay.mergeCommandGrace) }
        switch mergeWorker.answer(for: item.fileID, inputs: inputs, park: park) {
        case .waiting: return .waiting
        case .done(.success(let resolution)):
            if case .merged(let file, _) = resolution { temporaries.append(file) }
            return resolution
        case .done(.failure(let failure)): throw failure
        case .idle: break
        }
        let sides: (base: [UInt8], local: [UInt8], remote: [UInt8])
        if let read {
            sides = (read.base, read.local, read.remote)
        } else {
            sides = try readSides(local: local, ours: ours, theirs: current.state, baseManifest: baseManifest)
        }
        let owner = fileSystem.live.transact { _ in local.node.uid }
        let identity = MergeIdentity.forMerging(fileOwner: owner)
        logger.debug("the merge command \(definition.name) for \(path) starts on the merge worker")
        mergeWorker.start(item.fileID, inputs: inputs, park: park) { [self] in
            var made: [String] = []
            let outcome: MergeCommandWorker.Outcome
            do throws(SyncFailure) {
                outcome = .success(
                    try runMergeCommand(
                        definition, timeout: timeout, path: path, sides: sides, identity: identity,
                        temporaries: &made))
            } catch {
                outcome = .failure(error)
            }
            // Only the result's file outlives the command (the uploader removes it after use).
            var kept: String?
            if case .success(.merged(let file, _)) = outcome { kept = file }
            for file in made where file != kept { unlink(file) }
            return outcome
        }
        return .waiting
    }
}
