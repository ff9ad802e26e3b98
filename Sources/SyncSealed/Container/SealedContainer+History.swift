import SyncBackend

/// History and the trash of a sealed container (`ContainerHistory`): the history the container
/// underneath keeps of its opaque entries, decrypted, and only what the ledger vouched for.
///
/// The contract, beyond `ContainerHistory`'s:
/// - **A historic version is shown only if a ledger entry named it**: its sealed record's digest
///   (with its deletion state) was named for that entry by some ledger entry read (`LedgerView`'s
///   `named`), the version the feed shows now for the entry is that same record, the record opens
///   with an epoch key this device holds, and the manifest the server sees is the one the record
///   implies. Anything else raises a `SealedAlarm` (and nothing of the listing is shown).
/// - **The trash** is the decrypted tree's tombstones that the container underneath still keeps
///   content of (its `deletedEntries`), newest deletion first, paged by the versions underneath.
///   A tombstone listed there that the tree has since replaced (restored), or a withdrawn join
///   request, is left out; a deletion no ledger entry named is an alarm.
/// - Version numbers are the ledger's (`FeedSpot.version`), as for current entries; `before`
///   pages by them. The times (`committedAt`, `replacedAt`) and which versions the server still
///   keeps are the server's: the ledger does not sign them (the content of every version shown
///   is a member's).
/// - Restoring is an ordinary commit of the old state through the wrapper (`HistoryService`).
/// - A container underneath that keeps no history answers both calls with `invalidRequest`.
extension SealedContainer: ContainerHistory {
    public func history(of id: FileID, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion] {
        let size = try HistoryPage.size(limit)
        try checkAlarm()
        let listed = try await innerHistory().history(of: id, limit: size)
        // Read after the listing: every commit it shows has then been read and checked.
        try await readyToOpen()
        return try raising { () throws(SealedAlarm) -> [HistoricVersion] in
            try state.withLock { (state: inout State) throws(SealedAlarm) -> [HistoricVersion] in
                // The format's own objects (ledger entries, keyrings, join requests) are not the engine's.
                if let kind = state.view.vouched[id]?.kind, kind != .record { return [] }
                if let newest = listed.first, LedgerView.joinRequest(in: newest.entry) != nil { return [] }
                var opened: [HistoricVersion] = []
                for version in listed { opened.append(try Self.open(version, of: id, in: state)) }
                return opened
            }
        }
    }

    public func deletedEntries(before: EntryVersion?, limit: Int) async throws(ContainerProtocolError)
        -> [HistoricVersion]
    {
        let size = try HistoryPage.size(limit)
        try checkAlarm()
        let history = try innerHistory()
        var shown: [HistoricVersion] = []
        // `before` is the ledger's version; the container underneath pages by its own. Every
        // record of ledger entry N is stored below that entry, so its version bounds them.
        var position: EntryVersion? = nil
        if let before {
            try await readyToOpen()
            let sequence = FeedSpot(atLeast: before).sequence
            position = state.withLock { state in
                // Beyond the newest ledger entry: every deletion is below it.
                guard sequence <= state.view.head?.sequence ?? 0 else { return nil }
                return state.view.vouched[LedgerEntry.fileID(of: sequence)]?.stored.version ?? 0
            }
        }
        var caughtUp = false
        while shown.count < size {
            let page = try await history.deletedEntries(before: position, limit: size)
            // Read after the first page: every deletion it (or a page below it) lists was
            // committed before, and has been read and checked.
            if !caughtUp {
                try await readyToOpen()
                caughtUp = true
            }
            shown += try raising { () throws(SealedAlarm) -> [HistoricVersion] in
                try state.withLock { (state: inout State) throws(SealedAlarm) -> [HistoricVersion] in
                    var kept: [HistoricVersion] = []
                    for listed in page where listed.entry.version < (position ?? .max) {
                        if let trashed = try Self.trashed(listed, in: state), trashed.entry.version < (before ?? .max) {
                            kept.append(trashed)
                        }
                    }
                    return kept
                }
            }
            // A page that does not move backwards ends the listing (a hostile server cannot loop it).
            guard page.count == size, let oldest = page.map(\.entry.version).min(), oldest < (position ?? .max)
            else { break }
            position = oldest
        }
        return Array(shown.prefix(size))
    }

    /// The history of the container underneath.
    private func innerHistory() throws(ContainerProtocolError) -> any ContainerHistory {
        guard let history = inner as? any ContainerHistory else {
            throw .invalidRequest("the container under this encrypted one keeps no history")
        }
        return history
    }

    /// Reads the feed to its end, checked; a device that holds no key (not admitted yet) cannot
    /// open history, which is not the server's fault.
    private func readyToOpen() async throws(ContainerProtocolError) {
        try await catchUp()
        guard state.withLock({ !$0.keys.isEmpty }) else {
            throw .invalidRequest("this device holds no key of the encrypted container yet")
        }
    }

    /// `listed`, a version of `id` the container underneath keeps, decrypted, if the ledger
    /// vouched for it (see the contract); else the alarm.
    private static func open(_ listed: HistoricVersion, of id: FileID, in state: State) throws(SealedAlarm)
        -> HistoricVersion
    {
        guard listed.entry.id == id, let sealed = OpaqueEntry.sealed(from: listed.entry.state, of: id) else {
            throw .unvouched([id])
        }
        let digest = SealedRecord.digest(sealed)
        guard let voucher = state.view.named[NamedRecord(id: id, digest: digest, deleted: listed.entry.isDeleted)]
        else {
            throw .unvouched([id])
        }
        // The version the feed showed last must be the record the ledger vouches for now.
        if let current = state.view.vouched[id], current.stored.version == listed.entry.version,
            current.digest != digest || current.stored.isDeleted != listed.entry.isDeleted
        {
            throw .unvouched([id])
        }
        let entry = try decrypt(
            VouchedEntry(
                kind: .record, stored: listed.entry, sealed: sealed, digest: digest, spot: voucher.spot,
                device: voucher.device),
            keys: state.keys)
        return HistoricVersion(entry: entry, committedAt: listed.committedAt, replacedAt: listed.replacedAt)
    }

    /// `listed`, a tombstone the container underneath keeps, as the trash shows it: the tree's
    /// own tombstone at that version; nil if the tree has moved on since or it is not the
    /// engine's; the alarm if no ledger entry named that deletion.
    private static func trashed(_ listed: HistoricVersion, in state: State) throws(SealedAlarm) -> HistoricVersion? {
        let id = listed.entry.id
        guard listed.entry.isDeleted else { return nil }
        let digest = OpaqueEntry.sealed(from: listed.entry.state, of: id).map(SealedRecord.digest)
        if let current = state.tree.entries[id], state.view.vouched[id]?.stored.version == listed.entry.version {
            guard current.isDeleted, let digest, state.view.vouched[id]?.digest == digest else {
                throw .unvouched([id])
            }
            return HistoricVersion(entry: current, committedAt: listed.committedAt, replacedAt: nil)
        }
        if LedgerView.joinRequest(in: listed.entry) != nil { return nil }
        guard let digest, state.view.named[NamedRecord(id: id, digest: digest, deleted: true)] != nil else {
            throw .unvouched([id])
        }
        // An older deletion of an entry restored since: no longer in the trash.
        return nil
    }
}
