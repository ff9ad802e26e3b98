import Glibc

extension ContentResidency {
    /// The way out of lost content (`ContentLifecycle.openedTruncating`): a truncation to 0 drops
    /// the mark, so every byte the file holds afterwards is one a program wrote and may upload.
    /// Any other change of a lost file fails with EIO (`openedForWriting`): writing into the
    /// remains would make them look vouched for.
    func leaveLostContent(_ node: Node, truncatingTo size: Int64?) throws(FSError) {
        guard size == 0 else { throw .io(EIO) }
        live.transact { tree in tree.truncatedToZero(node) }
    }
}
