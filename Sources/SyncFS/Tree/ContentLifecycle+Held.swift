extension ContentLifecycle {
    /// The part of a file's content state its node holds (`Node.apply`): where the bytes are, the
    /// writes not yet handed to the store, whether the uploader holds the file taken, and the
    /// failure of a write. The outbox holds the rest (whether a change is queued);
    /// `state(queued:)` puts the two together.
    ///
    /// Packed in one word so the node keeps it in one atomic, read without a lock by the data
    /// path: bits 0–1 the residency, bit 2 the unrecorded writes, bit 3 taken for upload, bits
    /// 32–63 the errno of the failed write (0: none).
    struct Held: Hashable, Sendable, CustomStringConvertible {
        var residency: Residency
        /// Bytes went into the cache file since the node's record was last handed to the store.
        var hasUnrecordedWrites = false
        /// A write into the cache file failed with this errno (ENOSPC, EDQUOT, EIO); 0: none. Kept
        /// until a truncation to 0 (`openedTruncating`) even while the content is `lost`.
        var writeFailure: Int32 = 0
        /// Taken by the uploader (`uploadTaken`) and unchanged since: the state is `uploading`.
        /// Cleared by the upload's end (`uploadCommitted`, `uploadRefused`) and by every event
        /// that leaves the state elsewhere (a write, a truncation, a record, a lost cache file, a
        /// failed write, an adopted merge); the write path clears it without a lock
        /// (`Node.noteContentWritten`).
        var isTakenForUpload = false

        init(
            residency: Residency, hasUnrecordedWrites: Bool = false, writeFailure: Int32 = 0,
            isTakenForUpload: Bool = false
        ) {
            self.residency = residency
            self.hasUnrecordedWrites = hasUnrecordedWrites
            self.writeFailure = writeFailure
            self.isTakenForUpload = isTakenForUpload
        }

        static let unrecordedWritesBit: UInt64 = 1 << 2
        static let takenForUploadBit: UInt64 = 1 << 3
        /// The residency codes: bit 1 set for the two with local bytes (`hasLocalBytes`).
        private static let placeholderCode: UInt64 = 0
        private static let hydratingCode: UInt64 = 1
        private static let localCode: UInt64 = 2
        private static let lostCode: UInt64 = 3

        init(word: UInt64) {
            switch word & 3 {
            case Self.placeholderCode: residency = .placeholder
            case Self.hydratingCode: residency = .hydrating
            case Self.localCode: residency = .local
            default: residency = .lost
            }
            hasUnrecordedWrites = word & Self.unrecordedWritesBit != 0
            isTakenForUpload = word & Self.takenForUploadBit != 0
            writeFailure = Int32(bitPattern: UInt32(truncatingIfNeeded: word >> 32))
        }

        var word: UInt64 {
            let code: UInt64
            switch residency {
            case .placeholder: code = Self.placeholderCode
            case .hydrating: code = Self.hydratingCode
            case .local: code = Self.localCode
            case .lost: code = Self.lostCode
            }
            return code | (hasUnrecordedWrites ? Self.unrecordedWritesBit : 0)
                | (isTakenForUpload ? Self.takenForUploadBit : 0) | UInt64(UInt32(bitPattern: writeFailure)) << 32
        }

        /// Every byte is in the cache file, or was and is gone (`lost`): the data path uses the
        /// cache file, never a download.
        var hasLocalBytes: Bool { residency == .local || residency == .lost }

        /// `hasLocalBytes` and `residency == .lost` straight from a word (the data path's checks).
        static func hasLocalBytes(_ word: UInt64) -> Bool { word & localCode != 0 }
        static func isLost(_ word: UInt64) -> Bool { word & 3 == lostCode }

        var description: String {
            "\(residency.rawValue)\(hasUnrecordedWrites ? "+unrecorded" : "")\(isTakenForUpload ? "+taken" : "")"
                + (writeFailure != 0 ? "+writeFailure(\(writeFailure))" : "")
        }

        /// The whole state: the held part, with `queued` (an outbox row for the file) from the
        /// outbox. A file taken for upload is `uploading` (its item is queued while taken).
        func state(queued: Bool) -> State {
            State(
                downloadRunning: residency == .hydrating, isPlaceholder: !hasLocalBytes,
                hasLocalChanges: queued || hasUnrecordedWrites || isTakenForUpload,
                uploadInFlight: isTakenForUpload, contentLost: residency == .lost, writeFailed: writeFailure != 0)
        }

        /// What the node holds after `transition` (the machine's answer to `event`): its
        /// residency, whether it is taken for upload (the transition's state is `uploading`), and
        /// the marks the event sets or clears (`code`: the errno of `writeFailed`).
        func after(_ event: Event, _ transition: Transition, writeFailure code: Int32 = 0) -> Held {
            var next = self
            next.residency = transition.state.residency
            next.isTakenForUpload = transition.state.modification == .uploading
            switch event {
            case .written: next.hasUnrecordedWrites = true
            case .recorded: next.hasUnrecordedWrites = false
            case .writeFailed: if next.writeFailure == 0 { next.writeFailure = code }
            case .openedTruncating: next.writeFailure = 0
            default: break
            }
            return next
        }
    }
}
