import SyncBackend

/// A state directory whose database is missing or empty but whose cache still
/// holds content was used before — its database was deleted, truncated or replaced. Starting
/// fresh there would silently drop the queue (queued edits and new files) and then delete the
/// cache files that hold them (`Namespace.reconcileCache` removes cache files without an entry).
/// The file system refuses to load instead (`Refusal`; the daemon exits with
/// `ExitStatus.badInput`, doc/CLI.md) and names `syncfs-mount recover` (`LostStateRecovery`);
/// the cache files are left untouched.
enum UsedStateGuard {
    /// Why the state was not loaded, with what to do.
    struct Refusal: Error, CustomStringConvertible, Sendable {
        let description: String
    }

    /// Throws unless a database that says "never mounted" (no mount count and no entry but the
    /// root: a new or emptied database) goes with an empty cache. Call before anything
    /// reconciles the cache.
    static func check(_ stored: StoredState, cache: ContentCache, statePath: String) throws(Refusal) {
        guard stored.facts[.mountCount] == nil, !stored.entries.contains(where: { $0.ino != .root }) else { return }
        let cached = cache.allIDs().count
        guard cached > 0 else { return }
        throw Refusal(
            description: "the state directory \(statePath) was used before (its cache holds \(cached) file(s)) but its"
                + " database state.db is missing or empty: starting fresh would drop the changes not yet"
                + " uploaded. Nothing was changed. To get the cached content back (named by file ID; the"
                + " names were in the database) and start over: syncfs-mount recover \(statePath) --into DIR,"
                + " then mount again (doc/CLI.md, \"recover\").")
    }
}
