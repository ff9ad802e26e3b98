import ArgumentParser
import Foundation
import SyncBackend
import SyncServer

/// `--root DIR | --database URL`: where a server keeps its accounts, tokens and audit log, for
/// `user`, `member`, `device`, `token`, `link` and `audit`. Exactly one (exit 64 otherwise).
struct AccessPlaceOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The server root (must exist).", valueName: "dir"))
    var root: String?

    @Option(help: ArgumentHelp("Instead of --root: the PostgreSQL store (made by server-init).", valueName: "url"))
    var database: String?

    func validate() throws {
        switch (root, database) {
        case (nil, nil): throw ValidationError("give --root DIR (a server root) or --database URL")
        case (_?, _?): throw ValidationError("--root and --database exclude each other: give one")
        default: return
        }
    }

    /// Runs `body` with an administrator over this place's store (actor `admin`), to its end;
    /// exits with the error's status when it throws. Files it makes are private (umask 077).
    func withAdmin<T: Sendable>(
        _ body: @escaping @Sendable (AccountAdmin) async throws(SyncServerError) -> T
    ) throws -> T {
        makeFilesPrivate()
        let result: Result<T, SyncServerError>
        if let database {
            do throws(BackendFailure) {
                result = try withDatabaseAccess(database) { store throws(BackendFailure) in
                    Self.block(body, AccountAdmin(store: store))
                }
            } catch {
                throw fail(error)
            }
        } else {
            let path = absolutePath(root ?? "")
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw fail(SyncServerError(.badInput, "the root \(path) is not an existing directory"))
            }
            do throws(SyncServerError) {
                result = Self.block(body, AccountAdmin(store: EmbeddedAccessStore(store: try TokenStore(root: path))))
            } catch {
                throw fail(error)
            }
        }
        switch result {
        case .success(let value): return value
        case .failure(let error): throw fail(error)
        }
    }

    /// `body` with `admin`, to its end, as a `BackendFailure` when it throws.
    static func run<T: Sendable>(
        _ admin: AccountAdmin, _ body: @escaping @Sendable (AccountAdmin) async throws(SyncServerError) -> T
    ) throws(BackendFailure) -> T {
        switch block(body, admin) {
        case .success(let value): return value
        case .failure(let error): throw BackendFailure(error.exitStatus, error.description)
        }
    }

    private static func block<T: Sendable>(
        _ body: @escaping @Sendable (AccountAdmin) async throws(SyncServerError) -> T, _ admin: AccountAdmin
    ) -> Result<T, SyncServerError> {
        blockOn { () async -> Result<T, SyncServerError> in
            do throws(SyncServerError) { return .success(try await body(admin)) } catch { return .failure(error) }
        }
    }
}

/// Unix seconds as ISO 8601 (UTC), for listings.
func isoTime(_ seconds: Int64) -> String {
    Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)
}

/// `value` as one line of JSON with sorted keys.
func jsonLine<T: Encodable>(_ value: T) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    guard let data = try? encoder.encode(value) else { return "null" }
    return String(decoding: data, as: UTF8.self)
}

/// Columns padded to their widths, the last one as it is.
func tableRow(_ cells: [String], widths: [Int]) -> String {
    var line = ""
    for (index, cell) in cells.enumerated() {
        guard index < widths.count else {
            line += cell
            break
        }
        line += cell + String(repeating: " ", count: max(1, widths[index] - cell.count + 1))
    }
    return line.trimmingCharacters(in: .whitespaces)
}
