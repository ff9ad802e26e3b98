/// The checks a client makes on a server's answer to a batch of commits
/// (`POST .../commits/batch`) before anything is done with it: one outcome per change, each one
/// a possible answer to its own change.
///
/// - as many outcomes as changes;
/// - every entry an outcome carries is a valid entry (`RemoteEntryValidation`);
/// - `committed`: the change's entry, deleted exactly when the change is a delete, at a version
///   above the change's base;
/// - `versionConflict`: the current entry, if any, is the change's entry;
/// - `nameTaken`: answers a put, and the holder is another live entry;
/// - `parentMissing`, `wouldCreateCycle`: answer a put; `chunksMissing`: answers a put and names
///   only chunks of its manifest, at least one.
public enum CommitBatchAnswerValidation {
    /// Why `outcomes` cannot be the answer to `requests`, or nil if it can.
    public static func problem(with outcomes: [CommitOutcome], answering requests: [CommitRequest]) -> String? {
        guard outcomes.count == requests.count else {
            return "\(outcomes.count) outcomes for \(requests.count) changes"
        }
        for (index, (outcome, request)) in zip(outcomes, requests).enumerated() {
            if let problem = problem(with: outcome, answering: request) {
                return "the outcome of change \(index) (entry \(request.id)): \(problem)"
            }
        }
        return nil
    }

    static func problem(with outcome: CommitOutcome, answering request: CommitRequest) -> String? {
        let put: EntryState?
        if case .put(let state) = request.change { put = state } else { put = nil }
        switch outcome {
        case .committed(let entry):
            if let problem = RemoteEntryValidation.problem(with: entry) { return problem }
            guard entry.id == request.id else { return "it commits entry \(entry.id)" }
            guard entry.isDeleted == (put == nil) else {
                return put == nil ? "a delete committed as a live entry" : "a put committed as a tombstone"
            }
            guard entry.version > request.baseVersion else {
                return "committed at version \(entry.version), not above its base \(request.baseVersion)"
            }
        case .versionConflict(let current):
            guard let current else { return nil }
            if let problem = RemoteEntryValidation.problem(with: current) { return problem }
            guard current.id == request.id else { return "a version conflict with entry \(current.id)" }
        case .nameTaken(let holder):
            guard put != nil else { return "a delete cannot take a name" }
            if let problem = RemoteEntryValidation.problem(with: holder) { return problem }
            guard holder.id != request.id, !holder.isDeleted else {
                return "the name's holder \(holder.id) is the entry itself or deleted"
            }
        case .parentMissing, .wouldCreateCycle:
            guard put != nil else { return "\(outcome) answers only a put" }
        case .directoryNotEmpty:
            return nil
        case .chunksMissing(let hashes):
            guard let put else { return "a delete needs no chunks" }
            let manifest = Set(put.manifest.map(\.hash))
            guard !hashes.isEmpty, hashes.allSatisfy(manifest.contains) else {
                return "missing chunks that are not those of its manifest"
            }
        }
        return nil
    }
}
