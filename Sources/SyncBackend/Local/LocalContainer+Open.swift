import Foundation
import SQLiteSupport

extension LocalContainer {
    /// The marker file's content (JSON): `{"format": 2, "id": "<uuid>"}`.
    private struct Marker: Codable {
        var format: Int
        var id: String
    }

    /// Opens the container at `path`, creating it when the path is missing or an empty directory.
    ///
    /// A non-empty directory without a marker is refused (it is someone else's data), and so is a
    /// container of a newer format. A first-release container (format 1, a marker only) is
    /// upgraded in place. Several processes may open or create the same container at once.
    ///
    /// Private (`PrivateFiles`): the directory is created 0700 and everything in it 0600/0700;
    /// an existing one of this user's that others can reach is tightened, and one of another
    /// user's that others can reach is refused.
    ///
    /// `id`: the ID a container created here gets (`container copy` keeps its source's); a new
    /// one if nil. An existing container keeps its own.
    public static func openOrCreate(at path: String, id: String? = nil) throws(ContainerOpenError) -> LocalContainer {
        let files = FileManager.default
        let layout = LocalLayout(root: path)
        var isDirectory: ObjCBool = false
        if files.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw .notAContainer("\(path) is a file, not a container directory")
            }
            if files.fileExists(atPath: layout.markerPath) {
                return try open(layout)
            }
            let contents = (try? files.contentsOfDirectory(atPath: path)) ?? []
            guard contents.isEmpty else {
                throw .notAContainer(
                    "\(path) is not empty and is not a SyncFS container (no \(markerName)); choose an empty or new directory"
                )
            }
        }
        do {
            try PrivateFiles.directory(path, ownership: .anyOwnerIfPrivate)
            let entries = try prepare(layout, createDatabase: true)
            // The marker comes last (a directory with a marker always has its database), and only
            // if no other process wrote one meanwhile: then its ID is the container's.
            let proposed = Marker(format: formatVersion, id: id ?? UUID().uuidString.lowercased())
            guard try writeMarker(proposed, layout: layout, replacing: false) else { return try open(layout) }
            return LocalContainer(layout: layout, id: proposed.id, entries: entries)
        } catch let error as ContainerOpenError {
            throw error
        } catch let error as PrivateFiles.Refusal {
            throw .cannotCreate("cannot use the container at \(path): \(error)")
        } catch {
            throw .cannotCreate("cannot create the container at \(path): \(error)")
        }
    }

    /// The format and ID in the marker at `layout`, without opening anything.
    static func readMarker(_ layout: LocalLayout) throws(ContainerOpenError) -> (format: Int, id: String) {
        guard let data = FileManager.default.contents(atPath: layout.markerPath),
            let marker = try? JSONDecoder().decode(Marker.self, from: data)
        else {
            throw .notAContainer("\(layout.markerPath) is not a valid container marker")
        }
        return (marker.format, marker.id)
    }

    /// Opens the existing container at `layout` (its marker must be there); never creates one.
    static func open(_ layout: LocalLayout) throws(ContainerOpenError) -> LocalContainer {
        let marker = try readMarker(layout)
        guard marker.format <= formatVersion else {
            throw .unsupportedFormat(
                "\(layout.root) has container format \(marker.format); this syncfs-mount reads format \(formatVersion)")
        }
        do {
            // Format 1 had no database yet; from format 2 on a missing database is damage, and
            // is never silently replaced by an empty one.
            try PrivateFiles.directory(layout.root, ownership: .anyOwnerIfPrivate)
            let entries = try prepare(layout, createDatabase: marker.format < 2)
            if marker.format < formatVersion {
                _ = try writeMarker(Marker(format: formatVersion, id: marker.id), layout: layout, replacing: true)
            }
            return LocalContainer(layout: layout, id: marker.id, entries: entries)
        } catch let error as ContainerOpenError {
            throw error
        } catch let error as PrivateFiles.Refusal {
            throw .cannotCreate("cannot use the container at \(layout.root): \(error)")
        } catch {
            throw .cannotCreate("cannot open the container at \(layout.root): \(error)")
        }
    }

    /// Creates what is missing besides the marker (chunks directory, signal file) and opens the
    /// database.
    private static func prepare(_ layout: LocalLayout, createDatabase: Bool) throws -> LocalEntryStore {
        if mkdir(layout.chunksPath, 0o700) != 0 && errno != EEXIST {
            throw ContainerOpenError.cannotCreate(
                "cannot create \(layout.chunksPath): \(LocalFileIO.errorText(errno))")
        }
        _ = PrivateFiles.createFile(layout.signalPath, [0])
        do {
            return try LocalEntryStore(layout: layout, create: createDatabase)
        } catch let error as SQLiteSchemaTooNew {
            throw ContainerOpenError.unsupportedFormat("\(layout.databasePath): \(error)")
        }
    }

    /// Writes the marker atomically: a temporary file renamed over the marker (`replacing`), or
    /// hard-linked to its name, which fails if a marker exists (then returns false).
    private static func writeMarker(_ marker: Marker, layout: LocalLayout, replacing: Bool) throws -> Bool {
        let data = try JSONEncoder().encode(marker)
        let temporary = layout.markerPath + ".tmp-\(getpid())-\(marker.id)"
        defer { unlink(temporary) }
        if let code = PrivateFiles.createFile(temporary, Array(data)) {
            throw ContainerOpenError.cannotCreate("cannot write \(temporary): \(LocalFileIO.errorText(code))")
        }
        let placed = replacing ? rename(temporary, layout.markerPath) : link(temporary, layout.markerPath)
        guard placed == 0 else {
            let code = errno
            if !replacing, code == EEXIST { return false }
            throw ContainerOpenError.cannotCreate("cannot write \(layout.markerPath): \(LocalFileIO.errorText(code))")
        }
        return true
    }
}
