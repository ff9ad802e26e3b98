import Foundation
import TestSupport
import Testing

@testable import SyncMerge

/// Who a merge command runs as, what it inherits, and where its files are.
@Suite("MergeCommand identity and workspace")
struct MergeCommandIdentityTests {
    func output(_ result: MergeCommandResult) -> String { String(decoding: result.output, as: UTF8.self) }

    @Test func asRootACommandRunsAsNobodyWithNoGroups() throws {
        try #require(geteuid() == 0, "needs root (the mount tests run as root)")
        for owner: uid_t in [0, 4242] {  // root's file, and an owner the system does not know
            let identity = MergeIdentity.forMerging(fileOwner: owner)
            let result = MergeCommand.run(
                "id -u; id -g; id -G; cat /proc/self/status | grep -E '^(CapEff|CapPrm)'", timeoutSeconds: 10,
                workingDirectory: "/", identity: identity)
            #expect(result.merged, "\(result.reason ?? "") \(String(decoding: result.errorOutput, as: UTF8.self))")
            let lines = output(result).split(separator: "\n").map(String.init)
            #expect(Array(lines.prefix(3)) == ["65534", "65534", "65534"], "\(lines)")
            #expect(lines.dropFirst(3).allSatisfy { $0.hasSuffix("0000000000000000") }, "no capabilities: \(lines)")
        }
    }

    @Test func asRootACommandRunsAsTheFilesOwner() throws {
        try #require(geteuid() == 0, "needs root")
        // A user the system knows that is not root: the first non-root entry with a home.
        guard let entry = getpwnam("daemon") ?? getpwnam("bin") else { return }
        let uid = entry.pointee.pw_uid
        let gid = entry.pointee.pw_gid
        let result = MergeCommand.run(
            "id -u; id -g; id -G; echo $USER", timeoutSeconds: 10, workingDirectory: "/",
            identity: MergeIdentity.forMerging(fileOwner: uid))
        let name = String(cString: entry.pointee.pw_name)
        #expect(output(result) == "\(uid)\n\(gid)\n\(gid)\n\(name)\n")
    }

    @Test func theDaemonsEnvironmentAndDescriptorsDoNotReachTheCommand() throws {
        setenv("SYNCFS_TEST_SECRET_TOKEN", "do-not-leak", 1)
        defer { unsetenv("SYNCFS_TEST_SECRET_TOKEN") }
        let leaked = open("/dev/null", O_RDONLY)  // no O_CLOEXEC
        defer { close(leaked) }
        let result = MergeCommand.run(
            "env; ls /proc/$$/fd", timeoutSeconds: 10, workingDirectory: "/",
            identity: MergeIdentity.forMerging(fileOwner: 0))
        let text = output(result)
        #expect(result.merged)
        #expect(!text.contains("do-not-leak"), "\(text)")
        #expect(text.contains("PATH="))
        let descriptors = text.split(separator: "\n").filter { Int($0) != nil }
        #expect(!descriptors.contains(Substring(String(leaked))), "descriptor \(leaked) leaked: \(descriptors)")
    }

    @Test func aHostilePathInPlaceholdersIsNeverExecuted() throws {
        let temporary = try TemporaryDirectory("syncmerge-hostile")
        let directory = temporary.path
        chmod(directory, 0o777)
        let marker = directory + "/pwned"
        let path = "$(touch \(marker))`touch \(marker)`;touch \(marker) '\"\n.txt"
        let line = MergeCommand.commandLine("printf %%s %P", base: "b", local: "l", remote: "r", path: path)
        let result = MergeCommand.run(line, timeoutSeconds: 10, workingDirectory: "/")
        #expect(output(result) == path)
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    @Test func theWorkspaceIsTheCommandsAndNobodyElses() throws {
        try #require(geteuid() == 0, "needs root")
        let identity = MergeIdentity.forMerging(fileOwner: 0)
        let workspace = try MergeWorkspace(parent: "/tmp", owner: identity.switchTo)
        let local = try workspace.write("local", bytes("mine\n"))
        var info = stat()
        stat(workspace.path, &info)
        #expect(info.st_uid == 65534 && info.st_mode & 0o777 == 0o700)
        stat(local, &info)
        #expect(info.st_uid == 65534 && info.st_mode & 0o777 == 0o600)
        // The command may write its result…
        let result = MergeCommand.run(
            "echo merged > local && mkdir -p sub/deeper && touch sub/deeper/x", timeoutSeconds: 10,
            workingDirectory: workspace.path, identity: identity)
        #expect(result.merged, "\(String(decoding: result.errorOutput, as: UTF8.self))")
        #expect(try workspace.read("local", limit: 100) == bytes("merged\n"))
        // …but a symlink (or a hard link) to a file it cannot read never becomes the result.
        _ = MergeCommand.run(
            "rm local && ln -s /etc/shadow local", timeoutSeconds: 10, workingDirectory: workspace.path,
            identity: identity)
        #expect(throws: MergeWorkspace.Failure.self) { try workspace.read("local", limit: 1 << 20) }
        // Removal goes through descriptors: a symlink to a folder outside is removed, not followed.
        let temporaryOutside = try TemporaryDirectory("syncmerge-outside")
        let outside = temporaryOutside.path
        _ = FileManager.default.createFile(atPath: outside + "/keep", contents: Data("x".utf8))
        symlink(outside, workspace.path + "/sub/out")
        workspace.remove()
        #expect(!FileManager.default.fileExists(atPath: workspace.path))
        #expect(FileManager.default.fileExists(atPath: outside + "/keep"))
    }
}
