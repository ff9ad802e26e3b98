/// A state database SQLite finds damaged ("database disk image is malformed", "file is not a
/// database": a file cut short or overwritten). Nothing in it can be trusted to be complete, so
/// the mount refuses it (`ExitStatus.badInput`, doc/CLI.md), leaves the state directory as it is,
/// and says what to do: `syncfs-mount recover` gets the cached content back (the changes not
/// uploaded among it) and sets the damaged database aside, and the next mount starts over from
/// the container (`LostStateRecovery`).
enum DamagedStateDatabase {
    /// The refusal for `error` met opening or loading the database of `statePath`; nil if
    /// `error` is not damage.
    static func refusal(_ error: any Error, statePath: String) -> MountError? {
        guard let damage = MetadataStore.damage(in: error) else { return nil }
        return MountError(
            .badInput,
            "the state database \(statePath)/state.db is damaged (\(damage)). Nothing was changed."
                + " To get the cached content back (the changes not uploaded among it; named by file ID)"
                + " and start over from the container: syncfs-mount recover \(statePath) --into DIR,"
                + " then mount again (doc/CLI.md, \"recover\").")
    }
}
