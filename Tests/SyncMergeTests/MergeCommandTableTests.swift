import Foundation
import TestSupport
import Testing

@testable import SyncMerge

@Suite("MergeCommandTable and TrustedConfigFile")
struct MergeCommandTableTests {
    @Test func definitionsParse() {
        let table = MergeCommandTable(
            parsing: """
                # NAME   [timeout=S]  COMMAND
                sqlite-merge timeout=60  sqlite-merge %O %A %B\r
                  sort_2   sort -u %A %B -o %A   \t

                bad/name echo
                .hidden echo
                -x echo
                empty
                slow timeout=0 echo
                sort_2 sort %A %B -o %A
                """)
        #expect(
            table.definitions == [
                "sqlite-merge": .init(name: "sqlite-merge", template: "sqlite-merge %O %A %B", timeoutSeconds: 60),
                "sort_2": .init(name: "sort_2", template: "sort %A %B -o %A"),
            ])
        #expect(table.problems.map(\.line) == [5, 6, 7, 8, 9, 10])
        #expect(table.problems.last?.message.contains("defined again") == true)
    }

    @Test func namesAreShortPlainWords() {
        for name in ["a", "sqlite-merge", "x.y_z-1", String(repeating: "a", count: 64)] {
            #expect(MergeCommandTable.isValidName(name[...]), "\(name)")
        }
        for name in ["", ".a", "-a", "a b", "a/b", "$(x)", "a;b", "é", String(repeating: "a", count: 65)] {
            #expect(!MergeCommandTable.isValidName(name[...]), "\(name)")
        }
    }

    @Test func aRuleCanOnlyShortenTheMachinesTimeout() {
        let definition = MergeCommandTable.Definition(name: "x", template: "x", timeoutSeconds: 60)
        #expect(definition.effectiveTimeout(rule: nil) == 60)
        #expect(definition.effectiveTimeout(rule: 5) == 5)
        #expect(definition.effectiveTimeout(rule: 86_400) == 60)
        #expect(MergeCommandTable.Definition(name: "x", template: "x").effectiveTimeout(rule: 600) == 30)
    }

    /// A fresh 0700 directory below /tmp (sticky, root's: a trusted ancestor), removed after `body`.
    func withDirectory(_ body: (String) throws -> Void) throws {
        let temporary = try TemporaryDirectory("syncmerge-config")
        let directory = temporary.path
        try body(directory)
    }

    func write(_ path: String, _ text: String, mode: mode_t = 0o600) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, mode)
    }

    @Test func aTrustedFileIsRead() throws {
        try withDirectory { directory in
            try write(directory + "/merge-commands", "x echo\n")
            #expect(
                TrustedConfigFile.read(directory + "/merge-commands", owner: geteuid(), outside: "/mnt/x")
                    == .trusted(bytes("x echo\n")))
            #expect(TrustedConfigFile.read(directory + "/missing", owner: geteuid(), outside: nil) == .missing)
        }
    }

    @Test func aFileOthersCouldWriteIsIgnored() throws {
        try withDirectory { directory in
            let file = directory + "/merge-commands"
            try write(file, "x echo\n", mode: 0o620)
            #expect(untrusted(file, because: "writable by group or others"))
            chmod(file, 0o602)
            #expect(untrusted(file, because: "writable by group or others"))
            chmod(file, 0o644)
            #expect(!untrusted(file, because: ""), "readable by others is fine")
            // A folder on the way that others may write (not sticky): they could replace the file.
            let open = directory + "/open"
            mkdir(open, 0o700)
            chmod(open, 0o777)
            try write(open + "/merge-commands", "x echo\n")
            #expect(untrusted(open + "/merge-commands", because: "is writable by group or others"))
            // A symlink is not followed, even to a trusted file.
            symlink(file, directory + "/link")
            #expect(untrusted(directory + "/link", because: "symbolic link"))
            #expect(untrusted("relative/merge-commands", because: "not an absolute path"))
        }
    }

    @Test func aFileOfAnotherUserIsIgnored() throws {
        try withDirectory { directory in
            let file = directory + "/merge-commands"
            try write(file, "x echo\n")
            // Owned by us, but we are not the daemon's user 4242: neither ours nor root's.
            #expect(
                TrustedConfigFile.read(file, owner: 4242, outside: nil)
                    == (geteuid() == 0 ? .trusted(bytes("x echo\n")) : .untrusted("")) || geteuid() != 0)
            if geteuid() == 0 {
                chown(file, 65534, 65534)
                #expect(untrusted(file, because: "owned by uid 65534"))
                chown(file, 0, 0)
                chown(directory, 65534, 65534)
                #expect(untrusted(file, because: "is owned by uid 65534"), "a folder of another user")
            }
        }
    }

    @Test func aFileInsideTheMountIsIgnored() throws {
        try withDirectory { directory in
            mkdir(directory + "/mnt", 0o700)
            try write(directory + "/mnt/merge-commands", "x echo\n")
            #expect(
                TrustedConfigFile.read(directory + "/mnt/merge-commands", owner: geteuid(), outside: directory + "/mnt")
                    != .trusted(bytes("x echo\n")))
            // Also when reached through a symlinked folder.
            symlink(directory + "/mnt", directory + "/via")
            let outcome = TrustedConfigFile.read(
                directory + "/via/merge-commands", owner: geteuid(), outside: directory + "/mnt")
            #expect(
                outcome == .untrusted("\(directory)/via/merge-commands is inside the synced folder \(directory)/mnt"))
        }
    }

    func untrusted(_ path: String, because fragment: String) -> Bool {
        guard case .untrusted(let why) = TrustedConfigFile.read(path, owner: geteuid(), outside: nil) else {
            return false
        }
        return fragment.isEmpty || why.contains(fragment)
    }
}
