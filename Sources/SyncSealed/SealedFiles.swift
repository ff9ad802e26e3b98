import Crypto
import Foundation
import Glibc
import SyncBackend

/// Why a sealed container's local file cannot be used; `description` says which and why.
public struct SealedFileError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The device's private keys on disk: one file, mode 0600, owned by the user, never a symlink
/// (`DeviceKeys.encoded`). Every sealed container this user mounts on this machine uses it: the
/// device is the user on the machine.
public enum DeviceKeyFile {
    /// The keys at `path`, made (and written, 0600, in a 0700 directory) if there is no file yet.
    public static func loadOrCreate(_ path: String) throws(SealedFileError) -> DeviceKeys {
        if let keys = try load(path) { return keys }
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !directory.isEmpty {
            do {
                try PrivateFiles.directory(directory)
            } catch {
                throw SealedFileError(error.description)
            }
        }
        let keys = DeviceKeys.generate()
        // Written whole and synced under a name of its own, then linked into place, which fails if
        // the file exists: a crash leaves no empty or partial key, and two processes agree on one.
        let temporary = path + ".new-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        if let code = PrivateFiles.createFile(temporary, keys.encoded) {
            unlink(temporary)
            throw SealedFileError("cannot write the device key \(temporary): \(LocalFileIO.errorText(code))")
        }
        defer { unlink(temporary) }
        if link(temporary, path) != 0 {
            var code = errno
            // A file system without hard links: made in place (O_EXCL), as a last resort.
            if code == EPERM || code == EOPNOTSUPP || code == ENOSYS || code == EXDEV {
                code = PrivateFiles.createFile(path, keys.encoded) ?? 0
                if code == 0, LocalFileIO.syncDirectory(directory.isEmpty ? "." : directory) == nil { return keys }
            }
            // Another process made it first: use that one.
            if code == EEXIST, let existing = try load(path) { return existing }
            throw SealedFileError("cannot write the device key \(path): \(LocalFileIO.errorText(code))")
        }
        if let code = LocalFileIO.syncDirectory(directory.isEmpty ? "." : directory) {
            throw SealedFileError("cannot sync the folder of the device key \(path): \(LocalFileIO.errorText(code))")
        }
        return keys
    }

    /// The keys at `path`, or nil if there is no file. A file others can read, or of another
    /// owner, or a symlink, is refused: a key that may have leaked is not used.
    public static func load(_ path: String) throws(SealedFileError) -> DeviceKeys? {
        guard let bytes = try PrivateFile.read(path, limit: 4096) else { return nil }
        do {
            return try DeviceKeys(encoded: bytes)
        } catch {
            throw SealedFileError("\(path) is not a device key file: \(error)")
        }
    }
}

/// The newest ledger head a mount has checked of its sealed container, in its state directory
/// (`sequence (8) ‖ digest (32)`, 0600): that the file exists says the mount's container is
/// sealed, and a server that shows less, or another entry at that sequence, is caught.
public enum SealedHeadFile {
    public static let name = "sealed-head"

    public static func read(_ path: String) throws(SealedFileError) -> LedgerHead? {
        guard let bytes = try PrivateFile.read(path, limit: 64) else { return nil }
        var reader = SealedReader(bytes)
        guard let sequence = reader.uint64(), let digest = reader.fixed(32), reader.isAtEnd else {
            throw SealedFileError("\(path) is not a ledger head file")
        }
        return LedgerHead(sequence: sequence, digest: digest)
    }

    /// Replaces the file atomically and durably (written, synced, renamed over the old one, its
    /// folder synced).
    public static func write(_ head: LedgerHead, to path: String) throws(SealedFileError) {
        var writer = SealedWriter()
        writer.uint64(head.sequence)
        writer.fixed(head.digest)
        // A name of its own: two processes keeping heads at once never rename each other's half.
        let temporary = path + ".new-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        if let code = PrivateFiles.createFile(temporary, writer.bytes) {
            unlink(temporary)
            throw SealedFileError("cannot write \(temporary): \(LocalFileIO.errorText(code))")
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw SealedFileError("cannot replace \(path): \(LocalFileIO.errorText(code))")
        }
        let folder = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        if let code = LocalFileIO.syncDirectory(folder.isEmpty ? "/" : folder) {
            throw SealedFileError("cannot sync the folder of \(path): \(LocalFileIO.errorText(code))")
        }
    }
}

/// Reading a small private file safely: no symlink, a regular file of this user that nobody else
/// can read, at most `limit` bytes.
enum PrivateFile {
    static func read(_ path: String, limit: Int) throws(SealedFileError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw SealedFileError("cannot open \(path): \(LocalFileIO.errorText(errno))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw SealedFileError("\(path) is not a regular file")
        }
        guard info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
            throw SealedFileError("\(path) must belong to uid \(geteuid()) with mode 0600 (it holds a private key)")
        }
        guard info.st_size <= limit else { throw SealedFileError("\(path) is too large") }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + offset, $0.count - offset) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw SealedFileError("cannot read \(path): short read") }
            offset += count
        }
        return bytes
    }
}

/// A recovery key kept in a file (for `mount --recovery-key-file`): its text form, in a private
/// file (0600, this user's, not a symlink), surrounding whitespace ignored.
public enum RecoveryKeyFile {
    public static func read(_ path: String) throws(SealedFileError) -> String {
        guard let bytes = try PrivateFile.read(path, limit: 1024) else {
            throw SealedFileError("\(path) does not exist")
        }
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// The newest ledger head this device has checked of each sealed container it uses, kept beside
/// its key (`<device key>.heads/<SHA-256 of the container's ID>`, 0600 files in a 0700 folder):
/// a first mount in a new state directory, and the `encryption` commands, start from it, so a
/// server cannot show this device another container, or an older state, in place of one it knows.
public enum KnownHeads {
    static func path(for containerID: String, deviceKey: String) -> String {
        deviceKey + ".heads/" + Hex.string(SHA256.hash(data: Array(containerID.utf8)))
    }

    public static func read(for containerID: String, deviceKey: String) throws(SealedFileError) -> LedgerHead? {
        try SealedHeadFile.read(path(for: containerID, deviceKey: deviceKey))
    }

    /// Keeps `head` unless a newer one is kept already (under a lock, so that two processes
    /// keeping heads of one container never move it backwards).
    public static func write(_ head: LedgerHead, for containerID: String, deviceKey: String) throws(SealedFileError) {
        let file = path(for: containerID, deviceKey: deviceKey)
        let folder = deviceKey + ".heads"
        do {
            try PrivateFiles.directory(folder)
        } catch {
            throw SealedFileError(error.description)
        }
        let lock = open(folder + "/.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard lock >= 0 else { throw SealedFileError("cannot open \(folder)/.lock: \(LocalFileIO.errorText(errno))") }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            // A file system without flock: written without the lock (two processes may then move
            // the record back by a few entries, never past what either checked).
            if errno == ENOLCK || errno == EOPNOTSUPP || errno == EINVAL { break }
            guard errno == EINTR else {
                throw SealedFileError("cannot lock \(folder)/.lock: \(LocalFileIO.errorText(errno))")
            }
        }
        if let kept = try SealedHeadFile.read(file), kept.sequence >= head.sequence { return }
        try SealedHeadFile.write(head, to: file)
    }

    /// The ledger entry that admitted this device, once its owner confirmed it (the admission
    /// code, `SafetyCode.admissionCode`), or this device made the container or joined with the
    /// recovery key: `<heads>/<hash>.admission`, in the head file's format.
    public static func admission(for containerID: String, deviceKey: String) throws(SealedFileError) -> LedgerHead? {
        try SealedHeadFile.read(path(for: containerID, deviceKey: deviceKey) + ".admission")
    }

    public static func keepAdmission(_ head: LedgerHead, for containerID: String, deviceKey: String)
        throws(SealedFileError)
    {
        do {
            try PrivateFiles.directory(deviceKey + ".heads")
        } catch {
            throw SealedFileError(error.description)
        }
        try SealedHeadFile.write(head, to: path(for: containerID, deviceKey: deviceKey) + ".admission")
    }

    /// The newer of two heads (nil when both are).
    public static func newer(_ a: LedgerHead?, _ b: LedgerHead?) -> LedgerHead? {
        guard let a else { return b }
        guard let b else { return a }
        return a.sequence >= b.sequence ? a : b
    }
}
