import Foundation
import Glibc
import TestSupport
import Testing

@testable import SyncFS

/// `MountUsers` over a made-up /proc: which uses of a mount it finds, what it skips, and the
/// message a busy unmount prints.
@Suite("Mount users")
struct MountUsersTests {
    let proc: TemporaryDirectory

    init() throws { proc = try TemporaryDirectory() }

    /// A process entry: `links` maps `cwd`, `root` and `fd/N` to their targets.
    private func process(_ pid: Int, comm: String, links: [String: String], maps: String = "") throws {
        let directory = "\(proc.path)/\(pid)"
        try FileManager.default.createDirectory(atPath: directory + "/fd", withIntermediateDirectories: true)
        for (name, target) in links {
            try FileManager.default.createSymbolicLink(atPath: directory + "/" + name, withDestinationPath: target)
        }
        try (comm + "\n").write(toFile: directory + "/comm", atomically: false, encoding: .utf8)
        try maps.write(toFile: directory + "/maps", atomically: false, encoding: .utf8)
    }

    @Test func findsWorkingDirectoriesOpenFilesAndMappedFilesInsideTheMountOnly() throws {
        try process(10, comm: "sleep", links: ["cwd": "/mnt/box/work", "root": "/"])
        try process(
            11, comm: "vim",
            links: ["cwd": "/home/me", "root": "/", "fd/0": "/dev/pts/1", "fd/3": "/mnt/box/a (deleted)"])
        try process(
            12, comm: "python3", links: ["cwd": "/", "root": "/"],
            maps: "7f00-7f10 r--p 00000000 00:2a 17   /mnt/box/lib/data with space.bin\n"
                + "7f10-7f20 r-xp 00000000 08:01 99   /usr/lib/libc.so.6\n7f20-7f30 rw-p 00000000 00:00 0 \n")
        try process(13, comm: "ls", links: ["cwd": "/mnt/boxes", "root": "/", "fd/1": "/mnt/box2/f"])
        try process(14, comm: "daemon", links: ["cwd": "/mnt/box", "root": "/"])
        // A process names itself: a control character is not printed.
        try process(16, comm: "evil\u{1B}[2J", links: ["cwd": "/mnt/box", "root": "/"])
        // An entry without links: a process that exited while the scan ran.
        try FileManager.default.createDirectory(atPath: proc.path + "/15", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: proc.path + "/self", withIntermediateDirectories: true)

        let users = MountUsers.scan("/mnt/box", excluding: [14], proc: proc.path)

        #expect(
            users.users == [
                .init(pid: 10, command: "sleep", uses: ["working directory"]),
                .init(pid: 11, command: "vim", uses: ["open file"]),
                .init(pid: 12, command: "python3", uses: ["mapped file"]),
                .init(pid: 16, command: "evil?[2J", uses: ["working directory"]),
            ])
        #expect(users.unchecked == 0)
        #expect(
            users.busyMessage("/mnt/box")
                == "/mnt/box is busy: in use by sleep (PID 10: working directory), vim (PID 11: open file), "
                + "python3 (PID 12: mapped file), evil?[2J (PID 16: working directory); close those files (or leave "
                + "the folder) and try again")
    }

    @Test func saysSoWhenNoProcessWasFoundOrSomeCouldNotBeChecked() {
        let users = MountUsers(users: [], unchecked: 3)
        #expect(
            users.busyMessage("/mnt/box")
                == "/mnt/box is busy: no process using it was found; close the files open in it and try again "
                + "(3 processes this user may not inspect were not checked)")
    }
}
