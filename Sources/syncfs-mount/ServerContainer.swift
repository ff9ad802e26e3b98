import Foundation
import Logging
import SyncBackend
import SyncClient
import SyncFS

/// Opening a container on a sync server for a mount (`syncfs-mount mount https://HOST:PORT/NAME
/// MOUNTPOINT --token-file FILE`; doc/SEMANTICS.md, "Offline"), or on several servers of one
/// container (`https://a/NAME,https://b/NAME`: a `FailoverContainer`; doc/CLI.md, "Several servers").
///
/// - The token comes from `tokenFile` (its first line, whitespace trimmed). A missing, unreadable
///   or empty file is bad input; a file others can read is used with a warning. When the server
///   refuses the token later, the file is read again (`TokenFileReload`).
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
    ) throws(MountError) -> any Container {
        let list: ServerList
        do {
            list = try ServerList(parsing: url)
        } catch {
            throw MountError(.badInput, error.description)
        }
        let token = try readToken(tokenFile, logger: logger)
        for address in list.addresses where !address.isTLS && !address.isLoopback {
            logger.warning("\(address) is plain HTTP: the token and every file cross the network unencrypted")
        }
        let (containerID, answers) = try containerID(
            of: list, token: token, caFile: caFile, recordedID: recordedID, stateDirectory: stateDirectory,
            logger: logger)
        // A refused token makes the mount read the token file again (`TokenFileReload`).
        let bearer = BearerToken(token, reload: tokenFile.map { TokenFileReload.reloader($0, logger: logger) })
        let servers: [HTTPContainer]
        do {
            servers = try list.addresses.map { address throws(ClientSetupError) in
                try HTTPContainer(address: address, token: bearer, containerID: containerID, caFile: caFile)
            }
        } catch {
            throw MountError(.badInput, error.description)
        }
        // The role each answering server granted the token: the mount starts with it (`ContainerAccess`).
        for (server, info) in zip(servers, answers) { if let info { server.remember(info) } }
        ServerChoice.forget(stateDirectory: stateDirectory)
        guard servers.count > 1 else { return servers[0] }
        return FailoverContainer(servers: servers) { change in
            ServerChoice.record(change, stateDirectory: stateDirectory, logger: logger)
        }
    }

    /// The container ID every reachable server of `list` names (and the recorded one, if any),
    /// and each server's answer (nil where none came), in the list's order.
    /// Several servers: one answering with another ID than the others' (or the recorded one) is
    /// refused, naming both — a misconfigured or hostile server never joins the mount. A refused
    /// token anywhere is bad input. The first mount needs one server that answers (and every
    /// server that answers must have the container); later mounts start offline when none does.
    private static func containerID(
        of list: ServerList, token: String, caFile: String?, recordedID: String?, stateDirectory: String,
        logger: Logger
    ) throws(MountError) -> (String, [ContainerInfo?]) {
        var found: (id: String, address: ServerAddress)?
        var answers: [ContainerInfo?] = []
        if let recordedID { found = (recordedID, list.primary) }
        var unreachable: [String] = []
        for address in list.addresses {
            let answer = fetchInfo(address, token: token, caFile: caFile)
            if case .success(let info) = answer { answers.append(info) } else { answers.append(nil) }
            switch answer {
            case .success(let info):
                if let known = found, known.id != info.id {
                    if recordedID != nil {
                        throw MountError(
                            .badInput,
                            "the state directory \(stateDirectory) belongs to container \(known.id), but \(address) "
                                + "is container \(info.id); use another --state-dir"
                                + (list.addresses.count > 1 ? " (or remove \(address) from the server list)" : ""))
                    }
                    throw MountError(
                        .badInput,
                        "\(address) is container \(info.id), but \(known.address) is container \(known.id): "
                            + "every server in the list must serve the same container")
                }
                if found == nil { found = (info.id, address) }
            case .failure(.refused(let message)), .failure(.setup(let message)):
                throw MountError(.badInput, "\(address): \(message)")
            case .failure(.tls(let message)):
                guard recordedID != nil else { throw MountError(.badInput, message) }
                logger.warning("\(message); using the other servers (or offline) until it is fixed")
                unreachable.append(message)
            case .failure(.noContainer(let message)) where recordedID == nil:
                throw MountError(.badInput, "\(address): \(message)")
            case .failure(.noContainer(let message)), .failure(.unreachable(let message)):
                unreachable.append("\(address): \(message)")
            }
        }
        guard let found else {
            throw MountError(
                .unreachable, "cannot reach \(list) for the first mount: \(unreachable.joined(separator: "; "))")
        }
        if !unreachable.isEmpty {
            let offline = unreachable.count == list.addresses.count
            let what = offline ? "\(list) unreachable; starting offline" : "some servers unreachable"
            logger.notice("\(what) (\(unreachable.joined(separator: "; ")))")
        }
        return (found.id, answers)
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
