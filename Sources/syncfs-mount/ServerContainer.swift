import Foundation
import Logging
import SyncBackend
import SyncClient
import SyncFS

/// Opening a container on a sync server for a mount (`syncfs-mount mount https://HOST:PORT/NAME
/// MOUNTPOINT --token-file FILE`; doc/SEMANTICS.md, "Offline").
///
/// - The token comes from `tokenFile` (its first line, whitespace trimmed). A missing, unreadable
///   or empty file is bad input; a file others can read is used with a warning.
/// - The **first mount** of a state directory asks the server which container the URL names and
///   records its ID: an unreachable server fails the mount with exit 75 (nothing to work with
///   yet; `MountError.unreachable`, as a first attach that gets no answer), a refused
///   token or unknown name is bad input.
/// - **Later mounts** start even when the server is unreachable (offline start); a reachable
///   server whose container has another ID than the recorded one is refused (the state belongs
///   to the recorded container); a refused token is bad input.
public enum ServerContainer {
    static func open(
        _ url: String, tokenFile: String?, caFile: String?, recordedID: String?, stateDirectory: String,
        logger: Logger
    ) throws(MountError) -> HTTPContainer {
        let address: ServerAddress
        do {
            address = try ServerAddress(parsing: url)
        } catch {
            throw MountError(.badInput, error.description)
        }
        let token = try readToken(tokenFile, logger: logger)
        if !address.isTLS && !address.isLoopback {
            logger.warning("\(address) is plain HTTP: the token and every file cross the network unencrypted")
        }
        let info = fetchInfo(address, token: token, caFile: caFile)
        let containerID: String
        switch info {
        case .success(let info):
            if let recordedID, recordedID != info.id {
                throw MountError(
                    .badInput,
                    "the state directory \(stateDirectory) belongs to container \(recordedID), but \(address) "
                        + "is container \(info.id); use another --state-dir")
            }
            containerID = info.id
        case .failure(.refused(let message)), .failure(.setup(let message)):
            throw MountError(.badInput, "\(address): \(message)")
        case .failure(.tls(let message)):
            guard let recordedID else { throw MountError(.badInput, message) }
            logger.warning("\(message); starting offline until it is fixed")
            containerID = recordedID
        case .failure(.noContainer(let message)) where recordedID == nil:
            throw MountError(.badInput, "\(address): \(message)")
        case .failure(.noContainer(let message)), .failure(.unreachable(let message)):
            guard let recordedID else {
                throw MountError(.unreachable, "cannot reach \(address) for the first mount: \(message)")
            }
            logger.notice("\(address) unreachable; starting offline (\(message))")
            containerID = recordedID
        }
        do {
            return try HTTPContainer(address: address, token: token, containerID: containerID, caFile: caFile)
        } catch {
            throw MountError(.badInput, error.description)
        }
    }

    /// The token in `tokenFile`'s first line.
    private static func readToken(_ tokenFile: String?, logger: Logger) throws(MountError) -> String {
        guard let tokenFile else {
            throw MountError(.badInput, "a server URL needs --token-file FILE (made by `syncfs-mount token create`)")
        }
        guard let data = FileManager.default.contents(atPath: tokenFile),
            let text = String(data: data, encoding: .utf8)
        else {
            throw MountError(.badInput, "cannot read the token file \(tokenFile)")
        }
        let token =
            text.split(whereSeparator: \.isNewline).first.map {
                $0.trimmingCharacters(in: .whitespaces)
            } ?? ""
        guard !token.isEmpty else { throw MountError(.badInput, "the token file \(tokenFile) is empty") }
        if let warning = tokenFileWarning(tokenFile) { logger.warning("\(warning)") }
        return token
    }

    /// The warning for a token file that others can read or write (nil if only its owner can):
    /// logged by the daemon, and printed by the `mount` command on its standard error.
    public static func tokenFileWarning(_ tokenFile: String) -> String? {
        var status = stat()
        guard stat(tokenFile, &status) == 0, status.st_mode & 0o077 != 0 else { return nil }
        return "the token file \(tokenFile) can be read by others (mode "
            + String(status.st_mode & 0o777, radix: 8) + "); chmod 600 it"
    }

    private static func fetchInfo(_ address: ServerAddress, token: String, caFile: String?)
        -> Result<ContainerInfo, HTTPContainerError>
    {
        Result { () throws(HTTPContainerError) in
            try Blocking.run { () async throws(HTTPContainerError) in
                try await HTTPContainer.fetchInfo(address: address, token: token, caFile: caFile)
            }
        }
    }
}
