import Foundation
import Glibc

/// The processes that keep a mount busy: those with an open file, their working or root
/// directory, or a mapped file inside it — what a busy `unmount` names (doc/CLI.md, `unmount`).
///
/// Read from /proc, which changes while it is read: a process that exits meanwhile is skipped.
/// One whose entries this user may not read (another user's, without privilege) is counted as
/// unchecked, never guessed. Only /proc's links and text are read: nothing inside the mount is
/// touched, so a mount whose daemon is slow cannot hold the scan up.
struct MountUsers: Equatable, Sendable {
    struct User: Equatable, Sendable {
        let pid: pid_t
        /// The process's name (/proc/PID/comm), safe to print.
        let command: String
        /// How it uses the mount: `working directory`, `root directory`, `open file`, `mapped file`.
        let uses: [String]
    }

    var users: [User] = []
    /// Processes whose entries could not be read.
    var unchecked = 0

    /// Every process but `excluded` (the mount's daemon) that uses `mountpoint` or a path below it.
    static func scan(_ mountpoint: String, excluding excluded: Set<pid_t> = [], proc: String = "/proc") -> MountUsers {
        var found = MountUsers()
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: proc) else { return found }
        let pids = names.compactMap { pid_t($0) }.filter { $0 > 0 && !excluded.contains($0) }.sorted()
        for pid in pids {
            switch uses(of: "\(proc)/\(pid)", inside: mountpoint) {
            case .gone: continue
            case .unreadable: found.unchecked += 1
            case .uses(let uses) where !uses.isEmpty:
                found.users.append(User(pid: pid, command: command(of: "\(proc)/\(pid)"), uses: uses))
            case .uses: continue
            }
        }
        return found
    }

    /// `sleep (PID 4242: working directory), vim (PID 17: open file)`; at most `limit` named.
    func list(limit: Int = 10) -> String {
        var parts = users.prefix(limit).map { "\($0.command) (PID \($0.pid): \($0.uses.joined(separator: ", ")))" }
        if users.count > limit { parts.append("\(users.count - limit) more") }
        return parts.joined(separator: ", ")
    }

    /// What a busy unmount says about who uses `mountpoint`.
    func busyMessage(_ mountpoint: String) -> String {
        var message = "\(mountpoint) is busy: "
        if users.isEmpty {
            message += "no process using it was found; close the files open in it and try again"
        } else {
            message += "in use by \(list()); close those files (or leave the folder) and try again"
        }
        if unchecked > 0 {
            let processes = unchecked == 1 ? "1 process" : "\(unchecked) processes"
            message += " (\(processes) this user may not inspect were not checked)"
        }
        return message
    }

    private enum Finding {
        case gone
        case unreadable
        case uses([String])
    }

    /// How the process at `directory` (/proc/PID) uses the mount.
    private static func uses(of directory: String, inside mountpoint: String) -> Finding {
        func inside(_ path: String) -> Bool { path == mountpoint || path.hasPrefix(mountpoint + "/") }
        var uses: [String] = []
        for (link, use) in [("cwd", "working directory"), ("root", "root directory")] {
            switch readLink(directory + "/" + link) {
            case .success(let target): if inside(target) { uses.append(use) }
            case .failure(let error): return finding(for: error.code)
            }
        }
        guard let descriptors = opendir(directory + "/fd") else { return finding(for: errno) }
        var openFiles = 0
        while let entry = readdir(descriptors) {
            let name = entry.entryName
            guard name != ".", name != ".." else { continue }
            if case .success(let target) = readLink(directory + "/fd/" + name), inside(target) { openFiles += 1 }
        }
        closedir(descriptors)
        if openFiles > 0 { uses.append(openFiles == 1 ? "open file" : "\(openFiles) open files") }
        let maps = directory + "/maps"
        if let text = try? String(contentsOfFile: maps, encoding: .utf8) {
            // A line ends with the mapped file's path, the line's only `/`-started field.
            let mapped = text.split(separator: "\n").contains { line in
                line.firstIndex(of: "/").map { inside(String(line[$0...])) } ?? false
            }
            if mapped { uses.append("mapped file") }
        }
        return .uses(uses)
    }

    /// A failed read: the process is gone (ENOENT, ESRCH), or unreadable (anything else).
    private static func finding(for code: Int32) -> Finding {
        code == ENOENT || code == ESRCH ? .gone : .unreadable
    }

    private static func readLink(_ path: String) -> Result<String, Errno> {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count >= 0 else { return .failure(Errno(errno)) }
        return .success(String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// The process's name, each control character (a process names itself) shown as `?`.
    private static func command(of directory: String) -> String {
        let name =
            (try? String(contentsOfFile: directory + "/comm", encoding: .utf8))?
            .trimmingCharacters(in: .newlines) ?? ""
        let shown = String(
            String.UnicodeScalarView(name.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : $0 }))
        return shown.isEmpty ? "?" : shown
    }
}

/// An errno as an `Error`, for `Result`.
private struct Errno: Error {
    let code: Int32
    init(_ code: Int32) { self.code = code }
}
