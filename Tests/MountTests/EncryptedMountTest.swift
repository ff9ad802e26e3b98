import Foundation
import Glibc
import TestSupport
import Testing

/// End-to-end encrypted containers (doc/CRYPTO.md) through the built binary: two mounts of one
/// sealed container sync as any two mounts do, and the container underneath — what a server, its
/// disk or a stolen copy holds — contains none of the names, none of the content and none of the
/// exact sizes the mounts wrote (the plaintext scan).
///
/// No plain-directory counterpart: what is checked is where the bytes go, a SyncFS notion.
@Suite(.serialized)
struct EncryptedMountTest {
    /// Distinct names and texts a scan can look for.
    static let secretNames = ["Quarterly-Forecast-Zeta", "passwords-vault-omega.kdbx", "Kinderfotos-Urlaub-Delta"]
    static let secretText = "The merger with Globex closes on the ninth; tell nobody before the board meets."

    @Test func twoMountsOfASealedContainerSyncAndTheContainerHoldsNoPlaintext() throws {
        let keys = try TemporaryDirectory()
        let key = keys.path + "/device-key"
        try SyncedMounts.with(
            uploadDelay: 20, argumentsA: ["--create-encrypted", "--device-key", key],
            argumentsB: ["--encrypted", "--device-key", key]
        ) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let folder = Self.secretNames[0]
            try makeDirectory(a.path(folder))
            try writeFile(a.path(folder + "/" + Self.secretNames[1]), Self.secretText)
            let large = try randomBytes(3 << 20 + 70_001)
            try writeFile(a.path(Self.secretNames[2]), large)
            try posix("symlink") { symlink("../secret-target-Epsilon", a.path(folder + "/link")) }
            #expect(
                waitUntil(timeout: 30) { try readText(b.path(folder + "/" + Self.secretNames[1])) == Self.secretText },
                "\(mounts.logs())")
            #expect(waitUntil(timeout: 30) { try readFile(b.path(Self.secretNames[2])) == large }, "\(mounts.logs())")
            // And back: an edit and a rename on B reach A.
            try writeFile(b.path(folder + "/" + Self.secretNames[1]), Self.secretText + " Edited on B.")
            try posix("rename") { rename(b.path(folder), b.path(folder + "-renamed")) }
            #expect(
                waitUntil(timeout: 30) {
                    try readText(a.path(folder + "-renamed/" + Self.secretNames[1])) == Self.secretText
                        + " Edited on B."
                }, "\(mounts.logs())")
            _ = expectConverged(mounts, timeout: 30, "after changes on both sides")
            let status = ModelProcess.run([try TestFolder.binaryPath(), "status", a.root], timeout: 60)
            #expect(status.ok && status.stdout.contains("encryption: end-to-end encrypted, ledger entry"), "\(status)")
            #expect(!status.stdout.contains("ALARM"), "\(status)")

            let scan = try PlaintextScan(directory: mounts.containerPath)
            #expect(scan.totalBytes > large.count, "the container holds the content, sealed")
            for name in Self.secretNames + ["secret-target-Epsilon", folder + "-renamed"] {
                let found = scan.contains(Array(name.utf8))
                #expect(!found, "the container holds the name \(name)")
            }
            let textWindows = scan.windowsFound(of: Array(Self.secretText.utf8), width: 16)
            let contentWindows = scan.windowsFound(of: Array(large.prefix(1 << 20)), width: 16)
            #expect(textWindows == 0 && contentWindows == 0)
            // The large file's exact size (short sizes are everywhere by chance: not looked for).
            let size = Int64(large.count)
            for form in [
                Array(String(size).utf8), withUnsafeBytes(of: size.bigEndian) { Array($0) },
                withUnsafeBytes(of: size.littleEndian) { Array($0) },
            ] {
                let found = scan.contains(form)
                #expect(!found, "the container holds the exact size \(size) as \(form)")
            }
        }
    }

    /// The state database records that the container is sealed: a later mount wraps it even when
    /// the ledger head beside it is gone (a restored or damaged state directory), rather than take
    /// it for a plain container and upload in the clear.
    @Test func aMountWhoseLedgerHeadFileIsGoneStaysEncrypted() throws {
        let keys = try TemporaryDirectory()
        let key = keys.path + "/device-key"
        try SyncedMounts.with(
            uploadDelay: 20, argumentsA: ["--create-encrypted", "--device-key", key],
            argumentsB: ["--encrypted", "--device-key", key]
        ) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path("first.txt"), "before")
            #expect(waitUntil(timeout: 30) { try readText(b.path("first.txt")) == "before" }, "\(mounts.logs())")
            try b.unmount()
            try FileManager.default.removeItem(atPath: b.stateDir + "/sealed-head")
            try b.remount()
            let status = ModelProcess.run([try TestFolder.binaryPath(), "status", b.root], timeout: 60)
            #expect(status.ok && status.stdout.contains("encryption: end-to-end encrypted"), "\(status)")
            let name = "written-after-the-head-was-lost-Zeta"
            try writeFile(b.path(name), "after")
            #expect(waitUntil(timeout: 30) { try readText(a.path(name)) == "after" }, "\(mounts.logs())")
            #expect(!(try PlaintextScan(directory: mounts.containerPath).contains(Array(name.utf8))))
        }
    }

    @Test(arguments: MountServerBackend.allCases)
    func throughAServerTheServerHoldsNoPlaintext(backend: MountServerBackend) throws {
        let keys = try TemporaryDirectory()
        let key = keys.path + "/device-key"
        try SyncedMounts.with(
            uploadDelay: 20, argumentsA: ["--create-encrypted", "--device-key", key],
            argumentsB: ["--encrypted", "--device-key", key], overServer: true, backend: backend
        ) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let folder = Self.secretNames[0]
            try makeDirectory(a.path(folder))
            try writeFile(a.path(folder + "/" + Self.secretNames[1]), Self.secretText)
            let content = try randomBytes(1 << 20 + 70_001)
            try writeFile(a.path(Self.secretNames[2]), content)
            #expect(waitUntil(timeout: 30) { try readFile(b.path(Self.secretNames[2])) == content }, "\(mounts.logs())")
            try writeFile(b.path(folder + "/" + Self.secretNames[1]), Self.secretText + " Edited on B.")
            #expect(
                waitUntil(timeout: 30) {
                    try readText(a.path(folder + "/" + Self.secretNames[1])) == Self.secretText + " Edited on B."
                }, "\(mounts.logs())")
            _ = expectConverged(mounts, timeout: 30, "after changes on both sides")

            // What the server holds: its root (the embedded backend's containers and tokens), its
            // log, and with PostgreSQL + S3 a dump of its database and every object of its bucket.
            let server = try #require(mounts.server)
            var extra = [Array(server.log(limit: 50_000_000).utf8)]
            let objects = try TemporaryDirectory()
            if let database = server.database {
                let dump = ModelProcess.run(["pg_dump", database.databaseURL], timeout: 120)
                #expect(dump.ok, "\(dump)")
                extra.append(Array(dump.stdout.utf8))
                let count = try database.downloadBucket(into: objects.path)
                #expect(count >= 2, "the bucket holds the sealed chunks")
            }
            let scan = try PlaintextScan(directories: [server.root, objects.path], extra: extra)
            for name in Self.secretNames {
                // Raw, and as hex (a dump shows bytea columns so).
                let hex = Array(name.utf8).map { String(format: "%02x", $0) }.joined()
                let found = scan.contains(Array(name.utf8)) || scan.contains(Array(hex.utf8))
                #expect(!found, "the server holds the name \(name)")
            }
            let textWindows = scan.windowsFound(of: Array(Self.secretText.utf8), width: 16)
            let contentWindows = scan.windowsFound(of: Array(content.prefix(256 << 10)), width: 16)
            #expect(textWindows == 0 && contentWindows == 0)
        }
    }

    /// A second device asks to join, is approved after the codes are compared, reads what the
    /// first wrote; once removed, it reads nothing written after; a third device joins with the
    /// recovery key.
    @Test func devicesJoinByApprovalOrRecoveryKeyAndARemovedOneReadsNothingNew() throws {
        let keys = try TemporaryDirectory()
        let (keyA, keyB, keyC) = (keys.path + "/a", keys.path + "/b", keys.path + "/c")
        let binary = try TestFolder.binaryPath()
        let base = try TemporaryDirectory()
        let container = base.path + "/container"
        let recoveryFile = try EncryptedContainerInit.make(
            at: container, deviceKey: keyA, recoveryFile: keys.path + "/recovery"
        ).recoveryFile

        let a = try TestFolder.make(
            .mount, sharedContainer: container, mountArguments: ["--upload-delay", "20", "--device-key", keyA])
        defer { a.tearDown() }
        try writeFile(a.path("from-a.txt"), "written on A")

        // B is not a member: its first mount asks to join and says which code to compare.
        let bRoot = base.path + "/b"
        let bState = base.path + "/b-state"
        try makeDirectory(bRoot)
        let asked = ModelProcess.run(
            [binary, "mount", container, bRoot, "--state-dir", bState, "--device-key", keyB], timeout: 60)
        if TestFolder.isMounted(bRoot) { TestFolder.lazyUnmount(bRoot) }
        #expect(asked.status == 75, "\(asked)")
        let code = try #require(
            asked.stderr.range(of: "([0-9]{5} ){5}[0-9]{5}", options: .regularExpression).map {
                String(asked.stderr[$0])
            })
        let listed = ModelProcess.run([binary, "encryption", "devices", container, "--device-key", keyA], timeout: 60)
        #expect(listed.ok && listed.stdout.contains("safety code: \(code)"), "\(listed)")
        let wrong = ModelProcess.run(
            [binary, "encryption", "approve", container, "11111 22222 33333 44444 55555 66666", "--device-key", keyA],
            timeout: 60)
        #expect(wrong.status == 65, "\(wrong)")
        let approved = ModelProcess.run(
            [binary, "encryption", "approve", container, code, "--device-key", keyA], timeout: 60)
        #expect(approved.ok, "\(approved)")
        let admission = try #require(
            approved.stdout.range(of: "([0-9]{5} ){3}[0-9]{5}", options: .regularExpression).map {
                String(approved.stdout[$0])
            })

        // Its first mount as a member wants the admission code the approving device printed.
        let unconfirmed = ModelProcess.run(
            [binary, "mount", container, bRoot, "--state-dir", base.path + "/b-unconfirmed", "--device-key", keyB],
            timeout: 60)
        if TestFolder.isMounted(bRoot) { TestFolder.lazyUnmount(bRoot) }
        #expect(unconfirmed.status == 65 && unconfirmed.stderr.contains("--admission-code"), "\(unconfirmed)")
        let b = try TestFolder.make(
            .mount, sharedContainer: container,
            mountArguments: ["--upload-delay", "20", "--device-key", keyB, "--admission-code", admission])
        defer { b.tearDown() }
        #expect(waitUntil(timeout: 30) { try readText(b.path("from-a.txt")) == "written on A" }, "\(b.daemonLog())")

        // C joins with the recovery key.
        let c = try TestFolder.make(
            .mount, sharedContainer: container,
            mountArguments: ["--upload-delay", "20", "--device-key", keyC, "--recovery-key-file", recoveryFile])
        defer { c.tearDown() }
        #expect(waitUntil(timeout: 30) { try readText(c.path("from-a.txt")) == "written on A" }, "\(c.daemonLog())")

        // B is removed: what A writes next is of a new epoch, which B cannot open.
        // B's key, as the list shows it when B itself asks.
        let seenByB = ModelProcess.run([binary, "encryption", "devices", container, "--device-key", keyB], timeout: 60)
        let bLine = try #require(
            seenByB.stdout.split(separator: "\n").first { $0.contains("(this device)") }, "\(seenByB)")
        let bKey = String(try #require(bLine.split(separator: " ").dropFirst().first))
        let removed = ModelProcess.run(
            [binary, "encryption", "remove", container, bKey, "--device-key", keyA], timeout: 60)
        #expect(removed.ok, "\(removed)")
        try writeFile(a.path("after-removal.txt"), "B must not read this")
        #expect(
            waitUntil(timeout: 30) { try readText(c.path("after-removal.txt")) == "B must not read this" },
            "\(c.daemonLog())")
        #expect(waitUntil(timeout: 30) { b.daemonLog().contains("no key of epoch 1") }, "\(b.daemonLog())")
        #expect(!FileManager.default.fileExists(atPath: b.path("after-removal.txt")))
    }

    @Test func aFirstMountThatAsksForEncryptionRefusesAPlainContainer() throws {
        try TestFolder.with(.plain) { folder in
            let made = ModelProcess.run([try TestFolder.binaryPath(), "init", folder.containerPath], timeout: 60)
            #expect(made.ok, "\(made)")
            let keys = try TemporaryDirectory()
            let refused = ModelProcess.run(
                [
                    try TestFolder.binaryPath(), "mount", folder.containerPath, folder.root, "--state-dir",
                    folder.stateDir,
                    "--encrypted", "--device-key", keys.path + "/device-key",
                ], timeout: 60)
            if TestFolder.isMounted(folder.root) { TestFolder.lazyUnmount(folder.root) }
            #expect(refused.status == 65, "\(refused)")
            #expect(refused.stderr.contains("not an encrypted container"), "\(refused)")
        }
    }

    @Test func initEncryptedShowsTheRecoveryKeyOnceAndAnotherDeviceIsNotAMember() throws {
        try TestFolder.with(.plain) { folder in
            let keys = try TemporaryDirectory()
            let made = ModelProcess.run(
                [
                    try TestFolder.binaryPath(), "init", "--encrypted", folder.containerPath, "--device-key",
                    keys.path + "/device-key",
                ], timeout: 60)
            #expect(made.ok, "\(made)")
            #expect(made.stdout.range(of: "SFR1(-[A-Z2-7]{1,4}){14}", options: .regularExpression) != nil, "\(made)")
            var info = stat()
            #expect(stat(keys.path + "/device-key", &info) == 0 && info.st_mode & 0o777 == 0o600)
            // A device that is not a member cannot mount it.
            let stranger = ModelProcess.run(
                [
                    try TestFolder.binaryPath(), "mount", folder.containerPath, folder.root, "--state-dir",
                    folder.stateDir,
                    "--device-key", keys.path + "/other-device-key",
                ], timeout: 60)
            if TestFolder.isMounted(folder.root) { TestFolder.lazyUnmount(folder.root) }
            #expect(stranger.status != 0, "\(stranger)")
            #expect(stranger.stderr.contains("not a member"), "\(stranger)")
        }
    }
}

/// Every file below a directory, read whole, searched for byte strings.
struct PlaintextScan {
    let files: [[UInt8]]

    /// Every regular file below `directories`, and the `extra` byte strings (a log, a dump).
    init(directories: [String], extra: [[UInt8]] = []) throws {
        var files = extra
        for directory in directories {
            let walker = FileManager.default.enumerator(atPath: directory)
            while let relative = walker?.nextObject() as? String {
                let path = directory + "/" + relative
                var info = stat()
                guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
                files.append(try readFile(path))
            }
        }
        self.files = files
    }

    init(directory: String) throws { try self.init(directories: [directory]) }

    var totalBytes: Int { files.reduce(0) { $0 + $1.count } }

    func contains(_ needle: [UInt8]) -> Bool {
        files.contains { Data($0).range(of: Data(needle)) != nil }
    }

    /// How many of the 16-byte windows of `content` (every offset) occur anywhere.
    func windowsFound(of content: [UInt8], width: Int) -> Int {
        precondition(width == 16, "windows are two 64-bit words")
        guard content.count >= width else { return 0 }
        var windows = Set<Window>()
        windows.reserveCapacity(content.count)
        content.withUnsafeBytes { bytes in
            for start in 0...(content.count - width) { windows.insert(Window(bytes, at: start)) }
        }
        var found = 0
        for file in files where file.count >= width {
            file.withUnsafeBytes { bytes in
                for start in 0...(file.count - width) where windows.contains(Window(bytes, at: start)) { found += 1 }
            }
        }
        return found
    }

    private struct Window: Hashable {
        let high: UInt64
        let low: UInt64

        init(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
            high = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            low = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)
        }
    }
}
