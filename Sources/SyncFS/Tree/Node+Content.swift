import Synchronization

/// The file's content state as the node holds it (`ContentLifecycle.Held`, one atomic word,
/// `Node.content`). It changes only through the machine: `apply` feeds an event and keeps the
/// transition's state; the caller carries out the actions it returns.
///
/// Concurrency contract: `apply` and `recordHandedToStore` run under the namespace lock (they
/// compare-and-exchange the word with acquire-release ordering, so they never lose a bit the
/// write path sets meanwhile). The write path sets the unrecorded-writes bit and clears the
/// taken-for-upload bit without a lock (`noteWrite`, relaxed: only what the store is handed
/// under the lock depends on the first; the second is the machine's view only). Whether what the
/// uploader read is the file stays the seqlock's answer (`contentUnchanged(since:)`, checked
/// before every commit): a write that races the upload's read is caught there, whatever the
/// bit says at that instant. Readers
/// on the data path (`contentIsLocal`, `contentLost`) load with acquiring ordering: a residency
/// seen pairs with everything done under the lock before it changed.
extension Node {
    /// The held state now.
    var heldContent: ContentLifecycle.Held { ContentLifecycle.Held(word: content.load(ordering: .acquiring)) }

    /// The machine's whole state for this node: what it holds, with `queued` (an outbox row for
    /// the file, `Outbox.isPending`) from the outbox. Files only.
    func contentState(queued: Bool) -> ContentLifecycle.State {
        heldContent.state(queued: queued)
    }

    /// Files: every byte is in the cache file (false for a placeholder, whose cache file is
    /// missing or partly filled by a download; true for `lost` content, whose reads fail). Always
    /// true for directories and symlinks.
    var contentIsLocal: Bool { ContentLifecycle.Held.hasLocalBytes(content.load(ordering: .acquiring)) }

    /// The cache file of this modified file vanished or is shorter than recorded
    /// (`ContentLifecycle.Residency.lost`): reads and writes fail with EIO, nothing is uploaded
    /// until a truncation to 0 (`O_TRUNC`). Re-derived at every mount (`Namespace.reconcileCache`).
    var contentLost: Bool { ContentLifecycle.Held.isLost(content.load(ordering: .acquiring)) }

    /// A write into the cache file failed with this errno; 0: none
    /// (`ContentLifecycle.Modification.writeFailed`, `Tree/WriteFailures.swift`).
    var writeFailure: Int32 { heldContent.writeFailure }

    /// Content written since the last time the node's record was handed to the store.
    var hasUnrecordedWrites: Bool {
        content.load(ordering: .relaxed) & ContentLifecycle.Held.unrecordedWritesBit != 0
    }

    /// A file whose content is not (all) on this device: a placeholder, or one being downloaded.
    var isPlaceholder: Bool { kind == .file && !contentIsLocal }

    /// Feeds `event` to the content machine with the parts of the state the node does not hold
    /// (`queued`: the file has an outbox row), keeps the resulting state and returns the
    /// transition for the caller to carry out (`code`: the errno of a `writeFailed`). A pair that
    /// cannot happen changes nothing (its `diagnostic` says why). A change between local and not
    /// forgets the measured blocks (`allocatedBlocks`). Call under the namespace lock; files only.
    @discardableResult
    func apply(_ event: ContentLifecycle.Event, queued: Bool, writeFailure code: Int32 = 0)
        -> ContentLifecycle.Transition
    {
        var current = content.load(ordering: .acquiring)
        while true {
            let held = ContentLifecycle.Held(word: current)
            let transition = ContentLifecycle.transition(from: held.state(queued: queued), on: event)
            if transition.diagnostic != nil { return transition }
            let next = held.after(event, transition, writeFailure: code)
            if next.word == current { return transition }
            let (exchanged, original) = content.compareExchange(
                expected: current, desired: next.word, ordering: .acquiringAndReleasing)
            if exchanged {
                if held.hasLocalBytes != next.hasLocalBytes { allocatedBlocks = nil }
                return transition
            }
            current = original
        }
    }

    /// The node's record was handed to the store without queueing it (`recordChange`, a rename
    /// recorded with its own outbox rows): the writes so far are in it. Under the namespace lock.
    func recordHandedToStore() {
        content.bitwiseAnd(~ContentLifecycle.Held.unrecordedWritesBit, ordering: .relaxed)
    }

    /// Takes the unrecorded-writes mark (at unmount: the caller records the node). Under the
    /// namespace lock.
    func takeUnrecordedWrites() -> Bool {
        let bit = ContentLifecycle.Held.unrecordedWritesBit
        return content.bitwiseAnd(~bit, ordering: .relaxed).oldValue & bit != 0
    }

    /// The write path's share of `written` (lock-free): the machine's `written` changes only the
    /// marks of a node whose bytes are local: writes not yet recorded, and no longer taken for
    /// upload (`uploading` becomes `dirty`; `ContentLifecycleHeldTests` checks it against the
    /// table). So they are set here without running the table, and only if not set already (one
    /// relaxed load on the path of every write after the first).
    func noteContentWritten() {
        let unrecorded = ContentLifecycle.Held.unrecordedWritesBit
        let taken = ContentLifecycle.Held.takenForUploadBit
        var current = content.load(ordering: .relaxed)
        while current & (unrecorded | taken) != unrecorded {
            let (exchanged, original) = content.compareExchange(
                expected: current, desired: (current | unrecorded) & ~taken, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    /// Marks the node with the write failure the store kept from an earlier mount (at load, before
    /// any event). Under the namespace lock.
    func restoreWriteFailure(_ code: Int32) {
        var held = heldContent
        held.writeFailure = code
        content.store(held.word, ordering: .releasing)
    }
}
