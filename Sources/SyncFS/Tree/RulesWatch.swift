import Foundation
import SyncMerge
import Synchronization

/// The current error of each rules file (`.syncfs-rules`), known as soon as the file is saved
/// here or arrives from the container, not only when a merge reads it.
///
/// The core calls `touched` (under its namespace lock: it only sets a flag and wakes) whenever an
/// entry named like a rules file changes; the engine's rules thread (`RulesChecker.runChecks`)
/// then reads and parses the file and hands the result to `record`, which says whether the error
/// is new (so it is logged and published once per distinct error, not once per merge round).
/// `status` shows `errors`; an error clears when the file parses again or is gone.
final class RulesWatch: Sendable {
    private struct State {
        var touched = true
        /// Counts touches (the first read at the start is one): rules read under an older count
        /// may be out of date (`touchGeneration`).
        var generation: UInt64 = 1
        var errors: [String: String] = [:]
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    /// Whether the tree holds synced ignore files: their folder's path is part of their rules,
    /// so a folder moved then has them read again (`folderMoved`).
    private let ignoreFilesKnown = Atomic<Bool>(false)

    init() {}

    /// An entry with a rules file's name changed: check the rules again soon. Cheap, never blocks.
    func touched() {
        state.withLock { state in
            state.touched = true
            state.generation &+= 1
        }
        wake.signal()
    }

    /// How many touches so far: a read that began at this count is up to date while it stays.
    var touchGeneration: UInt64 { state.withLock { $0.generation } }

    /// A folder was renamed or moved (here or remotely): the synced ignore files are read again if
    /// there are any, as one below it now stands for another folder. Cheap, never blocks.
    func folderMoved() {
        if ignoreFilesKnown.load(ordering: .relaxed) { touched() }
    }

    /// Records whether the last read of the tree found synced ignore files (`folderMoved`).
    func noteIgnoreFiles(found: Bool) { ignoreFilesKnown.store(found, ordering: .relaxed) }

    /// Wakes the checker without a change (the engine is stopping).
    func poke() { wake.signal() }

    /// Waits until `touched` (or `poke`); true if the rules must be read again.
    func waitForTouch() -> Bool {
        if !state.withLock({ $0.touched }) { wake.wait() }
        return state.withLock { state in
            defer { state.touched = false }
            return state.touched
        }
    }

    /// Records the outcome of reading the rules file at `path`: its error (nil: none). Returns
    /// true when the error is new (differs from the one recorded): announce it then.
    func record(path: String, error: String?) -> Bool {
        state.withLock { state in
            let previous = state.errors[path]
            state.errors[path] = error
            return error != nil && error != previous
        }
    }

    /// The rules files that have an error now, by path.
    var errors: [RulesFileError] {
        state.withLock {
            $0.errors.map { RulesFileError(path: $0.key, message: $0.value) }.sorted { $0.path < $1.path }
        }
    }

    /// One line for a parse's problems ("line 3: …; line 7: …"), or nil if there are none.
    /// The file is synced (anybody with the token writes it): control characters become "?"
    /// and the line is cut at 1,000 characters, so a terminal showing `status` shows only text.
    static func message(_ problems: [RuleProblem]) -> String? {
        guard !problems.isEmpty else { return nil }
        return printableLine(problems.map { "line \($0.line): \($0.message)" }.joined(separator: "; "))
    }

    /// `text` as one printable line: control characters (C0, DEL, C1) become "?", cut at 1,000
    /// characters. For text that comes from outside (a synced file, a container's error).
    static func printableLine(_ text: String) -> String {
        let printable = String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) ? "?" : $0 }))
        return printable.count > 1000 ? printable.prefix(999) + "…" : printable
    }
}

/// A rules file with an error, as `status` shows it (`rulesErrors`).
public struct RulesFileError: Codable, Sendable, Equatable {
    /// Relative to the mount point (".syncfs-rules").
    public var path: String
    /// What is wrong ("line 3: unknown policy …; line 7: …"); the lines named are ignored.
    public var message: String
}
