import Foundation
import Glibc
import SyncClient

/// Where `syncfs-mount login` keeps the token it got, and where `mount URL` looks for it when no
/// `--token-file` is given: `/etc/syncfs/tokens/` for root, else
/// `$XDG_CONFIG_HOME/syncfs/tokens/` (an absolute `XDG_CONFIG_HOME`) or `~/.config/syncfs/tokens/`;
/// one file per server and container, named after them (`https_3A_2F_2Fsync.example.org_3A8443_2Fteam.token`).
/// The directory is made 0700 and the file written 0600, atomically (a new file renamed over).
enum LoginTokenFile {
    static func defaultPath(
        for address: ServerAddress, euid: uid_t = geteuid(),
        environment: [String: String] = ProcessInfo.processInfo
            .environment
    ) -> String? {
        let directory: String
        if euid == 0 {
            directory = "/etc/syncfs/tokens"
        } else if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            directory = config + "/syncfs/tokens"
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            directory = home + "/.config/syncfs/tokens"
        } else {
            return nil
        }
        return directory + "/" + fileName(for: address)
    }

    /// `ORIGIN/NAME` with every byte but `A-Z a-z 0-9 . -` written `_XX` (hex), and `.token`:
    /// one name per server and container, never the same for two (`_` is escaped too).
    static func fileName(for address: ServerAddress) -> String {
        var name = ""
        for byte in (address.origin + "/" + address.name).utf8 {
            let isSafe =
                (0x61...0x7A).contains(byte) || (0x41...0x5A).contains(byte) || (0x30...0x39).contains(byte)
                || byte == 0x2E || byte == 0x2D
            name += isSafe ? String(UnicodeScalar(byte)) : "_" + String(byte, radix: 16, uppercase: true)
        }
        return name + ".token"
    }

    /// The default file of the first server in `urls`, if it exists.
    static func existing(for urls: String) -> String? {
        guard let list = try? ServerList(parsing: urls), let path = defaultPath(for: list.primary),
            FileManager.default.fileExists(atPath: path)
        else { return nil }
        return path
    }

    /// Writes `token` to `path` (0600; its directory made 0700 if missing), replacing any file there.
    static func write(_ token: String, to path: String) throws(LoginFailure) {
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw LoginFailure("cannot make \(directory): \(error.localizedDescription)")
        }
        let temporary = path + ".new-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw LoginFailure("cannot write \(temporary): \(String(cString: strerror(errno)))")
        }
        let bytes = Array((token + "\n").utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == bytes.count, synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw LoginFailure("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// Why `login` could not finish (exit 65 for a refusal, 75 for an unreachable server).
struct LoginFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
