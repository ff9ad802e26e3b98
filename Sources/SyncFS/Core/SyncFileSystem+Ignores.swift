extension SyncFileSystem {
    /// Installs the mount's ignore settings; the changes held as ignored are looked at again
    /// under them.
    func configureIgnores(_ settings: MountIgnores.Settings) {
        ignores.configure(settings)
        // The synced ignore files are read again under the new settings (changes wait until then).
        rulesWatch.touched()
        outbox.releaseHeld()
    }
}
