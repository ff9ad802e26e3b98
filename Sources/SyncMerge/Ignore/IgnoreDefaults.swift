extension IgnoreFile {
    /// The temporary, lock and system files of editors, office suites and file managers, which
    /// they write next to the user's files and remove again: ignored unless the mount says
    /// `--no-default-ignores`. Each pattern names one program's files only (doc/SEMANTICS.md,
    /// "Ignore patterns", lists the programs); a plain `*.tmp` is not among them, as users keep
    /// files of that name.
    public static let defaultPatterns = [
        ".*.swp", ".*.swo", ".*.swx", ".*.kate-swp", "*~", "\\#*#", ".#*", ".goutputstream-*", ".~lock.*#", "~$*",
        "~*.tmp", ".DS_Store", "Thumbs.db", "desktop.ini",
    ]

    static let defaults = IgnoreFile(parsing: defaultPatterns.joined(separator: "\n"))
}
