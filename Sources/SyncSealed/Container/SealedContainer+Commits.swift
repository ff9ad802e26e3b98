import Foundation
import SyncBackend
import Synchronization

/// Commits: decided against the checked tree, stored with their signed ledger entry at once.
extension SealedContainer {
    // MARK: - Commits

    public func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        let outcomes = try await commit(batch: [request])
        return outcomes[0]
    }

    public func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try await commit(requests, allOrNothing: false)
    }

    public func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError)
        -> AllOrNothingOutcome
    {
        AllOrNothingOutcome(deciding: try await commit(requests, allOrNothing: true))
    }

    /// Decides `requests` against the checked tree and stores the changes with their ledger
    /// entry; with `allOrNothing`, nothing is stored unless every change would commit.
    private func commit(_ requests: [CommitRequest], allOrNothing: Bool) async throws(ContainerProtocolError)
        -> [CommitOutcome]
    {
        try CommitBatch.check(requests)
        guard requests.count <= LedgerEntry.maximumChanges else {
            throw .invalidRequest(
                "a commit to an encrypted container holds at most \(LedgerEntry.maximumChanges) changes (its ledger "
                    + "entry takes one place), not \(requests.count)")
        }
        // The ledger entry signs one author for all its changes.
        guard Set(requests.map(\.device)).count <= 1 else {
            throw .invalidRequest("the changes of one commit to an encrypted container carry one device name")
        }
        return try await turn.run { () async throws(ContainerProtocolError) -> [CommitOutcome] in
            var setAside: [Int: CommitOutcome] = [:]
            var resealed = Set<Int>()
            for _ in 0..<Self.commitAttempts {
                try await catchUpInTurn()
                let attempt = try plan(requests, setAside: setAside)
                let refused = attempt.outcomes.contains { if case .committed = $0 { false } else { true } }
                if attempt.changes.isEmpty || (allOrNothing && refused) { return attempt.outcomes }
                switch try await inner.commit(allOrNothing: attempt.requests) {
                case .committed:
                    // Each change is answered with the version its place in the ledger entry gives
                    // it (never one the container chose); the next read checks the commit like any
                    // other, that it is there as signed, and brings it into the tree.
                    // Checked by the next read, which keeps the head. Keeping it here already (so
                    // that a restart before that read still expects it) costs a sync on the
                    // upload path: measured at a quarter of the upload rate.
                    state.withLock { $0.ownCommit = attempt.ledger }
                    return attempt.outcomes
                case .refused(let index, .chunksMissing(let ids)) where index < attempt.requestIndex.count:
                    // Chunks the engine must upload first: answer that change so, and (unless all
                    // or nothing) commit the rest.
                    let original = attempt.requestIndex[index]
                    let hashes = attempt.plainHashes(for: ids, of: index)
                    // An older epoch's chunks (a version restored from before a new epoch):
                    // sealed again under the newest epoch, and decided again.
                    if resealed.insert(original).inserted, try await resealFromOlderEpochs(hashes) { continue }
                    let missing = CommitOutcome.chunksMissing(hashes)
                    if allOrNothing {
                        return attempt.outcomes.enumerated().map { $0.offset == original ? missing : $0.element }
                    }
                    setAside[original] = missing
                case .refused:
                    // Someone else committed first (the ledger's next entry, or one of these
                    // entries): read, decide again.
                    continue
                }
            }
            throw .busy("the sealed container's ledger kept moving; try again")
        }
    }

    /// A decided batch: each request's outcome (`.committed` placeholders for the changes to
    /// store), and the requests underneath that store them.
    private struct Attempt {
        var outcomes: [CommitOutcome]
        var changes: [PlannedChange]
        var requests: [CommitRequest]
        /// For each request underneath that stores a record: the engine's request it came from.
        var requestIndex: [Int]
        var keys: EpochKeys
        var manifests: [[ChunkRef]]
        /// The ledger entry the requests end with.
        var ledger: LedgerHead

        /// The plain hashes of `ids` among the manifest of request `index` underneath.
        func plainHashes(for ids: [ChunkHash], of index: Int) -> [ChunkHash] {
            let wanted = Set(ids)
            var seen = Set<ChunkHash>()
            return manifests[index].map(\.hash).filter {
                wanted.contains(keys.chunkID(for: $0)) && seen.insert($0).inserted
            }
        }
    }

    private func plan(_ requests: [CommitRequest], setAside: [Int: CommitOutcome]) throws(ContainerProtocolError)
        -> Attempt
    {
        let (tree, vouched, head, keys) = try state.withLock { state throws(ContainerProtocolError) in
            guard let head = state.view.head, let newest = state.view.keyring?.newestEpoch,
                let keys = state.keys[newest]
            else { throw ContainerProtocolError.invalidRequest("this device holds no key of the newest epoch") }
            return (state.tree, state.view.vouched, head, keys)
        }
        var lookup = PlannedLookup(tree: tree)
        var outcomes: [CommitOutcome] = []
        var changes: [PlannedChange] = []
        var requestIndex: [Int] = []
        var manifests: [[ChunkRef]] = []
        for (index, request) in requests.enumerated() {
            if let outcome = setAside[index] {
                outcomes.append(outcome)
                continue
            }
            switch try CommitRules.decide(request, in: lookup) {
            case .refuse(let outcome):
                outcomes.append(outcome)
            case .apply(let isDeleted, let newState):
                let current = tree.entry(request.id)
                let kind: PlannedChange.Kind
                if isDeleted {
                    guard let stored = vouched[request.id] else {
                        throw .invalidRequest("entry \(request.id) is not stored; there is nothing to delete")
                    }
                    kind = .delete(storedSealed: stored.sealed)
                } else {
                    let sealedBytes = SealedPadding.bucket(
                        SealedEnvelope.overhead + 4 + RecordEncoding.encode(newState).count)
                    guard sealedBytes <= OpaqueEntry.maximumSealedBytes else {
                        throw .invalidRequest(
                            "entry \(request.id) is too large for an encrypted container: its record would take "
                                + "\(sealedBytes) bytes, at most \(OpaqueEntry.maximumSealedBytes) (about 27,000 chunks)"
                        )
                    }
                    kind = .put(newState)
                }
                // The engine's versions are the ledger's; the container underneath compares its own.
                let base = current == nil ? 0 : vouched[request.id]?.stored.version ?? 0
                let spot = FeedSpot(sequence: head.sequence + 1, index: changes.count)
                changes.append(PlannedChange(id: request.id, baseVersion: base, kind: kind))
                requestIndex.append(index)
                manifests.append(isDeleted ? [] : newState.manifest)
                let entry = RemoteEntry(
                    id: request.id, version: spot.version, isDeleted: isDeleted, device: request.device,
                    state: newState)
                lookup.record(entry)
                outcomes.append(.committed(entry))
            }
        }
        let builder = SealedCommit(
            sequence: head.sequence + 1, previous: head.digest, keys: keys,
            device: requests.first?.device ?? "", signer: device, time: Self.now())
        let (underneath, entry) = builder.requests(for: changes)
        return Attempt(
            outcomes: outcomes, changes: changes, requests: underneath, requestIndex: requestIndex,
            keys: keys, manifests: manifests, ledger: LedgerHead(sequence: entry.sequence, digest: entry.digest))
    }
}
