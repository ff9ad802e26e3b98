/// The checks a client makes on a server's answer to an all-or-nothing commit
/// (`POST .../commits/all-or-nothing`) before anything is done with it:
///
/// - `committed`: one entry per change, in order, each a possible commit of its own change (as
///   `CommitBatchAnswerValidation` checks a `committed` outcome), at consecutive versions;
/// - `refused`: the index of a change of the call, and an outcome other than `committed` that
///   is a possible answer to that change (as `CommitBatchAnswerValidation` checks it).
public enum AllOrNothingAnswerValidation {
    /// Why `answer` cannot be the answer to `requests`, or nil if it can.
    public static func problem(with answer: AllOrNothingOutcome, answering requests: [CommitRequest]) -> String? {
        switch answer {
        case .committed(let entries):
            guard entries.count == requests.count else {
                return "\(entries.count) entries committed for \(requests.count) changes"
            }
            for (index, (entry, request)) in zip(entries, requests).enumerated() {
                if let problem = CommitBatchAnswerValidation.problem(with: .committed(entry), answering: request) {
                    return "the entry of change \(index) (entry \(request.id)): \(problem)"
                }
                if index > 0, entry.version != entries[index - 1].version + 1 {
                    return "change \(index) committed at version \(entry.version), "
                        + "not right after \(entries[index - 1].version)"
                }
            }
            return nil
        case .refused(let index, let outcome):
            guard requests.indices.contains(index) else {
                return "it refuses change \(index) of \(requests.count)"
            }
            if case .committed = outcome { return "change \(index) is refused as committed" }
            if let problem = CommitBatchAnswerValidation.problem(with: outcome, answering: requests[index]) {
                return "the refusal of change \(index) (entry \(requests[index].id)): \(problem)"
            }
            return nil
        }
    }
}
