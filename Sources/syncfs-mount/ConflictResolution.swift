import ArgumentParser
import Foundation
import Glibc
import SyncFS

/// What `resolve` keeps of a conflict.
enum ConflictChoice: Equatable {
    /// `--keep`'s values.
    enum Keep: String, ExpressibleByArgument, CaseIterable {
        case local, remote, both
    }

    /// The marks go, every file stays (`--keep both`, the default).
    case keepBoth
    /// One version stays in the original and the copy is deleted: `.local` is the version this
    /// machine had, `.remote` the other side's (`ConflictListing.keptHere` says which file holds
    /// which).
    case keep(Keep)
    /// The content of this file (the user's merge) goes into the original; the copy is deleted.
    case with(String)
}

/// `resolve --keep local|remote` and `--with FILE`, made of ordinary changes through the mount
/// (so they sync, and every machine ends the conflict as they reach it): the chosen content is
/// written into the original and synced (`fsync`: durable, doc/SEMANTICS.md "Durability"), and
/// only then is the copy deleted. A file merged with conflict markers has no copy: its mark is
/// removed by the daemon once FILE's content is in it.
struct ConflictResolution {
    /// Why a choice cannot be carried out for this PATH (exit 1); nothing was changed.
    struct Refusal: Error {
        let message: String
    }

    let target: MountedPath

    /// Carries out `choice` for the conflicts of the target; false if it has none.
    func resolve(_ choice: ConflictChoice) throws -> Bool {
        if case .keepBoth = choice { return try target.ask(.resolve).action?.files ?? 0 > 0 }
        let listed = try MountedPath(mountpoint: target.mountpoint, relative: "").ask(.conflicts).conflicts ?? []
        let conflicts = listed.filter { $0.path == target.relative || $0.originalPath == target.relative }
        guard let conflict = conflicts.first else { return false }
        var source: String?
        if case .with(let file) = choice { source = try Self.checkedSource(file) }
        guard conflicts.count == 1 else {
            throw Refusal(
                message: "\(target.display) has \(conflicts.count) conflict copies ("
                    + conflicts.map(\.path).joined(separator: ", ") + "); name the copy to resolve")
        }
        if conflict.originalPath == conflict.path {
            guard let source else {
                throw Refusal(
                    message: "\(target.display) was merged with conflict markers (both versions are in it): "
                        + "edit it and run `syncfs-mount resolve` on it, or give your merge with --with FILE")
            }
            let input = try Self.openSource(source)
            defer { close(input) }
            try write(input, from: source, into: conflict.path, expectedID: conflict.fileID)
            let marked = MountedPath(mountpoint: target.mountpoint, relative: conflict.path)
            return try marked.ask(.resolve).action?.files ?? 0 > 0
        }
        guard let originalPath = conflict.originalPath else { return false }
        let copyHoldsLocal = conflict.keptHere ?? false
        let copy = target.mountpoint + "/" + conflict.path
        var input: Int32?
        switch choice {
        case .keep(.local) where copyHoldsLocal, .keep(.remote) where !copyHoldsLocal:
            input = try Self.openEntry(copy, O_RDONLY, expectedID: conflict.fileID)
        default:
            if let source { input = try Self.openSource(source) }
        }
        if let input {
            defer { close(input) }
            try write(input, from: source ?? copy, into: originalPath, expectedID: conflict.originalFileID)
        }
        try deleteCopy(at: copy, expectedID: conflict.fileID)
        return true
    }

    /// FILE, if it is a regular file this user can read (else exit 65).
    private static func checkedSource(_ file: String) throws(MountError) -> String {
        let input = open(file, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else {
            throw MountError(.badInput, "cannot read \(file): \(String(cString: strerror(errno)))")
        }
        defer { close(input) }
        var info = stat()
        guard fstat(input, &info) == 0 else {
            throw MountError(.badInput, "cannot read \(file): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw MountError(
                .badInput, "\(file) is \(info.st_mode & S_IFMT == S_IFDIR ? "a directory" : "not a regular file")")
        }
        return file
    }

    /// FILE (`--with`, the user's own choice: a symlink there is followed), opened for reading.
    private static func openSource(_ file: String) throws -> Int32 {
        let input = open(file, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw MountError(.badInput, "cannot read \(file): \(reason())") }
        return input
    }

    /// An entry of the mount (a copy or an original: names other machines chose), opened without
    /// following a symlink, only if it is a regular file whose `user.syncfs.id` is `expectedID`
    /// — checked on the open descriptor, so what is read or written is the entry listed.
    private static func openEntry(_ path: String, _ mode: Int32, expectedID: String?) throws -> Int32 {
        let descriptor = open(path, mode | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ELOOP { throw Refusal(message: "\(path) is a symlink, not a file; nothing was changed") }
            throw MountError(.failed, "cannot open \(path): \(reason())")
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw Refusal(message: "\(path) is not a regular file; nothing was changed")
        }
        if let expectedID, fileID(ofDescriptor: descriptor) != expectedID {
            close(descriptor)
            throw Refusal(message: "\(path) is no longer the file listed in the conflict; nothing was changed")
        }
        return descriptor
    }

    /// Replaces the content of the entry at `relative` (which must still be `expectedID`) with
    /// what `input` holds, and syncs it.
    private func write(_ input: Int32, from source: String, into relative: String, expectedID: String?) throws {
        let destination = target.mountpoint + "/" + relative
        let output = try Self.openEntry(destination, O_WRONLY, expectedID: expectedID)
        var closed = false
        defer { if !closed { close(output) } }
        var from = stat()
        var to = stat()
        guard fstat(input, &from) == 0, fstat(output, &to) == 0 else {
            throw MountError(.failed, "cannot read \(destination): \(Self.reason())")
        }
        // FILE is the original itself: it holds the content already (truncating it would lose it).
        if from.st_dev == to.st_dev && from.st_ino == to.st_ino { return }
        guard ftruncate(output, 0) == 0 else {
            throw MountError(.failed, "cannot write \(destination): \(Self.reason()); the copy was kept")
        }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        while true {
            let count = read(input, buffer, 1 << 20)
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw MountError(.failed, "cannot read \(source): \(Self.reason()); the copy was kept")
            }
            var written = 0
            while written < count {
                let result = Glibc.write(output, buffer + written, count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    throw MountError(.failed, "cannot write \(destination): \(Self.reason()); the copy was kept")
                }
                written += result
            }
        }
        let synced = fsync(output) == 0
        closed = true
        guard close(output) == 0, synced else {
            throw MountError(.failed, "cannot sync \(destination): \(Self.reason()); the copy was kept")
        }
    }

    /// Deletes the copy, if it is still the one listed (its `user.syncfs.id`, read without
    /// following a symlink).
    private func deleteCopy(at path: String, expectedID: String?) throws {
        if let expectedID, Self.fileID(of: path) != expectedID {
            throw Refusal(message: "\(path) is no longer the conflict copy listed; nothing was deleted")
        }
        guard unlink(path) == 0 else {
            throw MountError(.failed, "cannot delete the conflict copy \(path): \(Self.reason())")
        }
    }

    private static func reason() -> String { String(cString: strerror(errno)) }

    private typealias GetXattr =
        @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int
    private typealias DescriptorGetXattr =
        @convention(c) (Int32, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int

    /// The entry's `user.syncfs.id`, not following a symlink (Glibc's module has no xattr calls:
    /// the C library's, by name).
    private static func fileID(of path: String) -> String? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "lgetxattr") else { return nil }
        let lgetxattr = unsafeBitCast(symbol, to: GetXattr.self)
        var value = [UInt8](repeating: 0, count: 64)
        let length = value.withUnsafeMutableBytes { lgetxattr(path, "user.syncfs.id", $0.baseAddress, $0.count) }
        return length > 0 ? String(decoding: value[..<length], as: UTF8.self) : nil
    }

    /// The open file's `user.syncfs.id`.
    private static func fileID(ofDescriptor descriptor: Int32) -> String? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "fgetxattr") else { return nil }
        let fgetxattr = unsafeBitCast(symbol, to: DescriptorGetXattr.self)
        var value = [UInt8](repeating: 0, count: 64)
        let length = value.withUnsafeMutableBytes { fgetxattr(descriptor, "user.syncfs.id", $0.baseAddress, $0.count) }
        return length > 0 ? String(decoding: value[..<length], as: UTF8.self) : nil
    }
}
