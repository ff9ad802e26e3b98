import Foundation
import Glibc
import SQLiteSupport
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// Private by default (doc/FORMATS.md, "Permissions"): what SyncFS keeps on disk is made
/// private, loose directories of ours are tightened, other users' are refused.
@Suite("Private files: modes, tightening, refusal")
struct PrivateFilesTests {
    private func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0o7777
    }

    @Test func newDirectoriesAndParentsAre0700AndLooseOnesOfOursAreTightened() throws {
        let temporary = try TemporaryDirectory("syncfs-privatefiles")
        let base = temporary.path
        try PrivateFiles.directory(base + "/a/b/c")
        for path in ["/a", "/a/b", "/a/b/c"] { #expect(mode(base + path) == 0o700, "\(path)") }

        mkdir(base + "/loose", 0o777)
        chmod(base + "/loose", 0o2777)
        try PrivateFiles.directory(base + "/loose")
        #expect(mode(base + "/loose") == 0o700)
    }

    @Test func anotherUsersDirectoryIsRefusedAndASymlinkToo() throws {
        let temporary = try TemporaryDirectory("syncfs-privatefiles")
        let base = temporary.path
        mkdir(base + "/theirs", 0o700)
        chown(base + "/theirs", 65534, 65534)
        #expect(throws: PrivateFiles.Refusal.self) { try PrivateFiles.directory(base + "/theirs") }
        // A private container of another user may be used; a loose one may not.
        try PrivateFiles.directory(base + "/theirs", ownership: .anyOwnerIfPrivate)
        chmod(base + "/theirs", 0o755)
        #expect(throws: PrivateFiles.Refusal.self) {
            try PrivateFiles.directory(base + "/theirs", ownership: .anyOwnerIfPrivate)
        }
        #expect(mode(base + "/theirs") == 0o755, "another user's directory is never changed")

        mkdir(base + "/real", 0o700)
        symlink(base + "/real", base + "/link")
        #expect(throws: PrivateFiles.Refusal.self) {
            try PrivateFiles.directory(base + "/link", followSymlink: false)
        }
    }

    @Test func aStateDirectoryOfAnotherUserIsRefusedWithHowToFixIt() throws {
        let temporary = try TemporaryDirectory("syncfs-privatefiles")
        let base = temporary.path
        mkdir(base + "/state", 0o755)
        chown(base + "/state", 65534, 65534)
        do {
            try StateDirectory(path: base + "/state").create()
            Issue.record("a state directory of uid 65534 was used")
        } catch {
            #expect("\(error)".contains("belongs to uid 65534"), "\(error)")
            #expect("\(error)".contains("chmod 0700"), "\(error)")
        }
    }

    @Test func aLooseDatabaseAndItsLogAreTightenedAndANewOneIs0600() throws {
        let temporary = try TemporaryDirectory("syncfs-privatefiles")
        let base = temporary.path
        do {
            let connection = try SQLiteConnection(path: base + "/new.db")
            try connection.execute("PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1)")
            #expect(mode(base + "/new.db") == 0o600)
            #expect(mode(base + "/new.db-wal") == 0o600)
            #expect(mode(base + "/new.db-shm") == 0o600)
        }
        for suffix in ["", "-wal", "-shm"] { chmod(base + "/new.db" + suffix, 0o644) }
        let reopened = try SQLiteConnection(path: base + "/new.db", create: false)
        try reopened.execute("INSERT INTO t VALUES (2)")
        for suffix in ["", "-wal", "-shm"] {
            #expect(mode(base + "/new.db" + suffix) == 0o600, "new.db\(suffix)")
        }
    }
}
