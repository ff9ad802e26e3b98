import SyncMerge
import Synchronization

/// The ignore rules this mount uses now (doc/SEMANTICS.md, "Ignored paths on a mount"): the
/// built-in defaults and the local ignore file as the mount was told, and the synced
/// `.syncfs-ignore` files as the rules thread last read them (`IgnoreFilesReader`).
///
/// Changing any of them bumps `generation`; whoever installs new rules lets the changes held as
/// ignored go again (`Outbox.releaseHeld`). Reads are one lock and a copy of the value.
final class MountIgnores: Sendable {
    /// What the mount was told (`--no-default-ignores`, `--no-synced-ignores`, `--ignore-file`).
    struct Settings: Sendable {
        var defaults: Bool
        var synced: Bool
        var local: IgnoreFile?
        /// Where `local` was read from (for `status`).
        var localPath: String?

        /// Nothing is ignored (a file system made without a mount's settings).
        static let none = Settings(defaults: false, synced: false, local: nil)
    }

    /// The rules in force, and what they were made of.
    struct Current: Sendable {
        var settings: Settings
        /// The synced ignore files read, by folder ("" for the root).
        var synced: [String: IgnoreFile] = [:]
        /// Their texts as read (a read that finds the same texts changes nothing).
        var syncedTexts: [String: String] = [:]
        /// Folders whose `.syncfs-ignore` exists but cannot be read yet (a placeholder not
        /// downloaded): entries never uploaded below them wait for it.
        var unreadable: Set<String> = []
        var rules: IgnoreRules
        var generation: UInt64 = 0
        /// The rules watch's touch count (`RulesWatch.touchGeneration`) the last read of the
        /// synced files began at: while the watch counts more, the rules are pending.
        var readGeneration: UInt64 = 0
    }

    private let state: Mutex<Current>

    init(_ settings: Settings = .none) {
        state = Mutex(Current(settings: settings, rules: Self.rules(settings, synced: [:])))
    }

    var current: Current { state.withLock { $0 } }
    var rules: IgnoreRules { state.withLock { $0.rules } }
    var settings: Settings { state.withLock { $0.settings } }

    /// Installs new settings (at mount, or the local file read again).
    func configure(_ settings: Settings) {
        state.withLock { current in
            current.settings = settings
            current.rules = Self.rules(settings, synced: current.synced)
            current.generation &+= 1
        }
    }

    /// Installs the synced files of a read that began at touch count `readGeneration`; returns
    /// whether the rules changed.
    @discardableResult
    func setSynced(_ files: [String: String], unreadable: Set<String>, readGeneration: UInt64 = .max) -> Bool {
        state.withLock { current in
            current.readGeneration = max(current.readGeneration, readGeneration)
            guard files != current.syncedTexts || unreadable != current.unreadable else { return false }
            let parsed = files.mapValues { IgnoreFile(parsing: $0) }
            current.syncedTexts = files
            current.synced = parsed
            current.unreadable = unreadable
            current.rules = Self.rules(current.settings, synced: parsed)
            current.generation &+= 1
            return true
        }
    }

    /// The rules of `settings` with the synced files `synced` (none if the mount turned them off).
    private static func rules(_ settings: Settings, synced: [String: IgnoreFile]) -> IgnoreRules {
        IgnoreRules(defaults: settings.defaults, synced: settings.synced ? synced : [:], local: settings.local)
    }
}

extension MountIgnores.Current {
    /// Whether an ignore file was touched (or the mount started) and not read since: the synced
    /// rules may be out of date, and every change waits for the read (`touches`: the rules
    /// watch's count now).
    func rulesPending(touches: UInt64) -> Bool { settings.synced && readGeneration < touches }

    /// No pattern can ignore anything (and nothing waits for an ignore file): the uploader need
    /// not look.
    var ignoresNothing: Bool {
        !settings.defaults && settings.local == nil && (!settings.synced || (synced.isEmpty && unreadable.isEmpty))
    }

    /// The deepest folder above `path` (or at it) whose synced ignore file cannot be read yet.
    func unreadableFolder(above path: String) -> String? {
        guard settings.synced, !unreadable.isEmpty else { return nil }
        return unreadable.filter { $0.isEmpty || path.hasPrefix($0 + "/") }.max { $0.count < $1.count }
    }
}
