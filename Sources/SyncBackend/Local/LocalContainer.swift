import Foundation

/// Why a container path cannot be used.
public enum ContainerError: Error, CustomStringConvertible, Sendable {
    /// The path exists but is not a SyncFS container (a file, or a non-empty foreign directory).
    case notAContainer(String)
    /// The container was made by a newer SyncFS.
    case unsupportedFormat(String)
    case cannotCreate(String)

    public var description: String {
        switch self {
        case .notAContainer(let reason), .unsupportedFormat(let reason), .cannotCreate(let reason): return reason
        }
    }
}

/// The embedded default container: a local directory, marked by `syncfs-container.json`.
///
/// In this release the container is created and recorded only; the sync engine stores entries
/// and chunks in it next. The marker holds the format version and a random container ID, which
/// every mount records so a state directory is never used with another container.
public struct LocalContainer: Sendable {
    public static let markerName = "syncfs-container.json"
    public static let formatVersion = 1

    public let path: String
    public let id: String

    private struct Marker: Codable {
        var format: Int
        var id: String
    }

    /// Opens the container at `path`, creating it when the path is missing or an empty directory.
    public static func openOrCreate(at path: String) throws(ContainerError) -> LocalContainer {
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        let markerPath = path + "/" + markerName
        if files.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw .notAContainer("\(path) is a file, not a container directory")
            }
            if files.fileExists(atPath: markerPath) {
                return try open(path: path, markerPath: markerPath)
            }
            let contents = (try? files.contentsOfDirectory(atPath: path)) ?? []
            guard contents.isEmpty else {
                throw .notAContainer(
                    "\(path) is not empty and is not a SyncFS container (no \(markerName)); choose an empty or new directory"
                )
            }
        }
        do {
            try files.createDirectory(atPath: path, withIntermediateDirectories: true)
            let marker = Marker(format: formatVersion, id: UUID().uuidString.lowercased())
            let data = try JSONEncoder().encode(marker)
            let temporary = markerPath + ".tmp"
            try data.write(to: URL(fileURLWithPath: temporary), options: .atomic)
            try files.moveItem(atPath: temporary, toPath: markerPath)
            return LocalContainer(path: path, id: marker.id)
        } catch {
            throw .cannotCreate("cannot create the container at \(path): \(error.localizedDescription)")
        }
    }

    private static func open(path: String, markerPath: String) throws(ContainerError) -> LocalContainer {
        guard let data = FileManager.default.contents(atPath: markerPath),
            let marker = try? JSONDecoder().decode(Marker.self, from: data)
        else {
            throw .notAContainer("\(markerPath) is not a valid container marker")
        }
        guard marker.format <= formatVersion else {
            throw .unsupportedFormat(
                "\(path) has container format \(marker.format); this syncfs-mount reads format \(formatVersion)")
        }
        return LocalContainer(path: path, id: marker.id)
    }
}
