import SyncBackend

extension SyncFailure {
    /// What makes failures "the same" for the log (`RepeatedFailureLog`): the container's
    /// transient states are one kind each, whichever entry met them; anything else is its own
    /// kind per entry (worth a line for each entry, then a summary per interval).
    func logKind(for id: FileID) -> String {
        switch self {
        case .container(.busy): return "busy"
        case .container(.unavailable): return "unavailable"
        case .container(.storageFailure): return "storageFailure"
        case .container(let error): return "\(id.hex): \(error)"
        case .local(let reason): return "\(id.hex): \(reason)"
        }
    }

    /// The upload failed only because the container could not be reached (`unavailable`): it is
    /// retried as soon as the container answers again. Other failures, storage failures of the
    /// container included, keep their backoff.
    var waitsForContainer: Bool {
        if case .container(.unavailable) = self { return true }
        return false
    }

    /// The change is waiting, not failing: the container could not be reached (`unavailable`)
    /// or asked to be called later (`busy`). Everything else — a refusal, a storage failure, a
    /// local error — is a failure `status` lists with its reason.
    var isWaiting: Bool {
        switch self {
        case .container(.unavailable), .container(.busy): return true
        default: return false
        }
    }
}
