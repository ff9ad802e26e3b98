import Foundation
import Glibc
import SyncBackend
import SyncPostgres

/// One end of `container copy`: a local container directory, or `db:NAME` in the database.
enum CopyEnd {
    case local(String)
    case database(String)

    static let databasePrefix = "db:"

    init(_ argument: String) {
        if argument.hasPrefix(Self.databasePrefix) {
            self = .database(String(argument.dropFirst(Self.databasePrefix.count)))
        } else {
            self = .local(absolutePath(argument))
        }
    }

    var isDatabase: Bool {
        if case .database = self { return true }
        return false
    }

    /// Whether both ends name one container (the same resolved directory, or the same name).
    func sameContainer(as other: CopyEnd) -> Bool {
        switch (self, other) {
        case (.database(let a), .database(let b)): return a == b
        case (.local(let a), .local(let b)): return Self.resolved(a) == Self.resolved(b)
        default: return false
        }
    }

    private static func resolved(_ path: String) -> String {
        guard let real = realpath(path, nil) else { return URL(fileURLWithPath: path).standardized.path }
        defer { free(real) }
        return String(cString: real)
    }

    /// The source container (65 if there is none).
    func openSource(store: PostgresStore?) throws(BackendFailure) -> any Container {
        switch self {
        case .local(let path):
            guard LocalContainer.isContainer(at: path) else {
                throw BackendFailure(.badInput, "\(path) is not a container (\(LocalContainer.whatIsThere(path)))")
            }
            do {
                return try LocalContainer.openExisting(at: path)
            } catch {
                throw BackendFailure(.badInput, "cannot open the source \(path): \(error.description)")
            }
        case .database(let name):
            guard let store else { throw BackendFailure(.usage, "db:\(name) needs --database") }
            let found = try waitFor("look up \(name)") { () async throws(ContainerProtocolError) in
                try await store.container(named: name)
            }
            guard let found else { throw BackendFailure(.badInput, "the database has no container named \(name)") }
            return found
        }
    }

    /// A staged, empty or partly copied destination for `source`.
    func stage(for source: any Container, store: PostgresStore?) throws(BackendFailure) -> StagedCopy {
        switch self {
        case .local(let path): return try Self.stageLocal(path, id: source.containerID)
        case .database(let name):
            guard let store else { throw BackendFailure(.usage, "db:\(name) needs --database") }
            return try Self.stageInDatabase(name, id: source.containerID, store: store)
        }
    }

    private static func stageLocal(_ path: String, id: String) throws(BackendFailure) -> StagedCopy {
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        if files.fileExists(atPath: path, isDirectory: &isDirectory) {
            let empty = isDirectory.boolValue && ((try? files.contentsOfDirectory(atPath: path)) ?? ["?"]).isEmpty
            guard empty else {
                throw BackendFailure(
                    .badInput, "the destination \(path) exists and is not an empty directory: nothing was copied")
            }
        }
        let url = URL(fileURLWithPath: path)
        let parent = url.deletingLastPathComponent().path
        guard files.fileExists(atPath: parent, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw BackendFailure(.badInput, "the destination's directory \(parent) does not exist")
        }
        let staging = parent + "/." + url.lastPathComponent + ".syncfs-copy"
        var resumed = false
        if files.fileExists(atPath: staging) {
            if LocalContainer.markerID(at: staging) == id {
                resumed = true
            } else {
                // Ours by its name: an interrupted copy of another container. Start again.
                do { try files.removeItem(atPath: staging) } catch {
                    throw BackendFailure(.cannotCreate, "cannot remove the stale staged copy \(staging): \(error)")
                }
            }
        }
        let container: LocalContainer
        do {
            container = try LocalContainer.openOrCreate(at: staging, id: id)
        } catch {
            throw BackendFailure(.cannotCreate, "cannot stage the copy at \(staging): \(error.description)")
        }
        return StagedCopy(container: container, resumed: resumed) { () throws(BackendFailure) in
            // Whoever still holds a reference (a task of the copy finishing), the database is
            // closed before its directory moves: no log is left behind.
            container.closeDatabase()
            // An empty directory at the destination is replaced; anything else makes rename fail.
            if files.fileExists(atPath: path) { _ = rmdir(path) }
            guard rename(staging, path) == 0 else {
                let reason = String(cString: strerror(errno))
                throw BackendFailure(
                    .cannotCreate, "cannot publish the copy at \(path) (\(reason)); it stays staged at \(staging)")
            }
        }
    }

    private static func stageInDatabase(
        _ name: String, id: String, store: PostgresStore
    ) throws(BackendFailure) -> StagedCopy {
        let staging = ".syncfs-copy." + name
        let existing = try waitFor("look up \(name)") { () async throws(ContainerProtocolError) in
            try await store.container(named: name)
        }
        guard existing == nil else {
            throw BackendFailure(.badInput, "the database holds a container named \(name) already: nothing was copied")
        }
        let holder = try waitFor("look up the container ID") { () async throws(ContainerProtocolError) in
            try await store.containerName(withID: id)
        }
        var resumed = false
        if let holder, holder != staging {
            throw BackendFailure(
                .badInput, "the database holds this container (ID \(id)) already, as \(holder): nothing was copied")
        }
        let staged = try waitFor("look up the staged copy") { () async throws(ContainerProtocolError) in
            try await store.container(named: staging)
        }
        let container: PostgresContainer
        if let staged, staged.containerID == id {
            container = staged
            resumed = true
        } else {
            container = try waitFor("stage the copy") { () async throws(ContainerProtocolError) in
                if staged != nil { try await store.dropStagedContainer(named: staging) }
                return try await store.createContainer(named: staging, id: id)
            }
        }
        return StagedCopy(container: container, resumed: resumed) { () throws(BackendFailure) in
            try waitFor("publish the copy as \(name)") { () async throws(ContainerProtocolError) in
                try await container.publish(as: name)
            }
        }
    }
}

/// A destination being filled: `publish` makes it the container the command was asked for.
///
/// `take` hands the container out once; a local container's database is closed explicitly
/// (checkpointed, its log removed) by `publish` before its directory is renamed.
final class StagedCopy {
    private var container: (any ImportableContainer)?
    let resumed: Bool
    private let publishing: () throws(BackendFailure) -> Void

    init(
        container: any ImportableContainer, resumed: Bool, publish: @escaping () throws(BackendFailure) -> Void
    ) {
        self.container = container
        self.resumed = resumed
        self.publishing = publish
    }

    func take() throws(BackendFailure) -> any ImportableContainer {
        guard let container else { throw BackendFailure(.failure, "the staged copy was taken twice") }
        self.container = nil
        return container
    }

    func publish() throws(BackendFailure) { try publishing() }
}

/// Runs `work` to its end; its failure as a `BackendFailure` (75 if retryable, else 65).
private func waitFor<T: Sendable>(
    _ what: String, _ work: @escaping @Sendable () async throws(ContainerProtocolError) -> T
) throws(BackendFailure) -> T {
    let result = blockOn { () async -> Result<T, ContainerProtocolError> in
        do throws(ContainerProtocolError) { return .success(try await work()) } catch { return .failure(error) }
    }
    switch result {
    case .success(let value): return value
    case .failure(let error):
        throw BackendFailure(error.isRetryable ? .temporaryFailure : .badInput, "cannot \(what): \(error)")
    }
}
