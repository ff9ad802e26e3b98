import Foundation
import Glibc

/// A temporary directory could not be made.
public struct TemporaryDirectoryError: Error, CustomStringConvertible {
    public let description: String
}

/// Makes a new directory `/tmp/<prefix>-XXXXXX` (unique, mode 0700) and returns its path with
/// symbolic links resolved. The caller removes it (see `TemporaryDirectory` for one that removes
/// itself).
public func makeTemporaryDirectory(_ prefix: String = "syncfs-tests") throws -> String {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else {
        throw TemporaryDirectoryError(description: "mkdtemp /tmp/\(prefix)-XXXXXX: \(String(cString: strerror(errno)))")
    }
    guard let resolved = realpath(made, nil) else { return String(cString: made) }
    defer { free(resolved) }
    return String(cString: resolved)
}

/// A new temporary directory (see `makeTemporaryDirectory`), removed with everything in it by
/// `remove()` or, at the latest, when the value goes away.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(_ prefix: String = "syncfs-tests") throws {
        path = try makeTemporaryDirectory(prefix)
    }

    public func remove() { try? FileManager.default.removeItem(atPath: path) }

    deinit { remove() }
}
