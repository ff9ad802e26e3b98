import SyncBackend

/// Why a history command (`versions`, `trash`, `restore`) could not be done: a message for the
/// user, and whether trying again later may help.
struct HistoryFailure: Error, CustomStringConvertible {
    let description: String
    let isRetryable: Bool

    init(_ description: String, retryable: Bool = false) {
        self.description = description
        self.isRetryable = retryable
    }

    init(_ failure: SyncFailure) {
        self.init(failure.description, retryable: failure.isRetryable)
    }

    static let unsupported = HistoryFailure("this container keeps no history (a server of an older SyncFS?)")
}

/// The container's history as the daemon's commands read it: synchronous (the control thread
/// blocks, never the cooperative pool) and checked where it enters. A version whose entry fails
/// `RemoteEntryValidation`, belongs to another entry, or (in the trash) is not a tombstone is
/// dropped, as are versions out of order: what is listed or restored is only what passed.
struct HistoryReader: Sendable {
    /// The container's history, nil when it keeps none.
    let base: (any ContainerHistory)?
    /// The most deleted entries read for one listing (pages of `HistoryPage.limits.upperBound`).
    static let trashReadLimit = 100_000

    /// The kept versions of `id`, newest first.
    func versions(of id: FileID) throws(HistoryFailure) -> [HistoricVersion] {
        let listed = try call { history throws(ContainerProtocolError) in
            try await history.history(of: id, limit: HistoryPage.limits.upperBound)
        }
        var checked: [HistoricVersion] = []
        for version in listed where version.entry.id == id && Self.passes(version) {
            if let last = checked.last, last.entry.version <= version.entry.version { continue }
            checked.append(version)
        }
        return checked
    }

    /// The deleted entries whose content is kept, newest deletion first (at most `trashReadLimit`).
    func trash() throws(HistoryFailure) -> [HistoricVersion] {
        var all: [HistoricVersion] = []
        var before: EntryVersion?
        while all.count < Self.trashReadLimit {
            let page = try call { [before] history throws(ContainerProtocolError) in
                try await history.deletedEntries(before: before, limit: HistoryPage.limits.upperBound)
            }
            for version in page where version.entry.isDeleted && Self.passes(version) {
                if let before, version.entry.version >= before { continue }
                all.append(version)
            }
            // A page that does not move backwards ends the listing (a hostile server cannot loop it).
            guard page.count == HistoryPage.limits.upperBound, let oldest = page.map(\.entry.version).min(),
                oldest < (before ?? .max)
            else { break }
            before = oldest
        }
        return all
    }

    private static func passes(_ version: HistoricVersion) -> Bool {
        RemoteEntryValidation.problem(with: version.entry) == nil && version.committedAt >= 0
    }

    private func call<T: Sendable>(
        _ body: @escaping @Sendable (any ContainerHistory) async throws(ContainerProtocolError) -> T
    ) throws(HistoryFailure) -> T {
        guard let base else { throw .unsupported }
        do throws(ContainerProtocolError) {
            return try Blocking.run { () async throws(ContainerProtocolError) in try await body(base) }
        } catch {
            throw HistoryFailure(.container(error))
        }
    }
}
