/// The answer to `Container.commit(allOrNothing:)`: every change committed, or none.
public enum AllOrNothingOutcome: Equatable, Sendable, Codable {
    /// Every change was committed, together: the entries in the order of the requests, at
    /// consecutive versions.
    case committed([RemoteEntry])
    /// Nothing was stored: change `index` (the first that would have been refused) would have
    /// been answered `outcome`, deciding the changes in order as `commit(batch:)` does (against
    /// the container as the changes before it would have left it). Never `.committed`.
    case refused(index: Int, outcome: CommitOutcome)

    /// The answer for `outcomes`, the batch's decision of each change in order
    /// (`commit(batch:)`'s): `committed` if every one is, else `refused` naming the first that
    /// is not. The caller stores the changes only for `committed`.
    public init(deciding outcomes: [CommitOutcome]) {
        var entries: [RemoteEntry] = []
        entries.reserveCapacity(outcomes.count)
        for (index, outcome) in outcomes.enumerated() {
            guard case .committed(let entry) = outcome else {
                self = .refused(index: index, outcome: outcome)
                return
            }
            entries.append(entry)
        }
        self = .committed(entries)
    }

    /// Whether every change was committed.
    public var isCommitted: Bool {
        if case .committed = self { return true }
        return false
    }

    /// The commit outcomes this answer carries (every entry as `.committed`, or the one refusal),
    /// for `CommitBatch.checkAnswer`.
    var carriedOutcomes: [CommitOutcome] {
        switch self {
        case .committed(let entries): return entries.map(CommitOutcome.committed)
        case .refused(_, let outcome): return [outcome]
        }
    }
}

extension CommitBatch {
    /// `checkAnswer` for an all-or-nothing answer: throws `invalidRequest` (the caller stores
    /// nothing) if its JSON would be over `maximumAnswerBytes`.
    public static func checkAnswer(_ answer: AllOrNothingOutcome) throws(ContainerProtocolError) {
        try checkAnswer(answer.carriedOutcomes)
    }
}
