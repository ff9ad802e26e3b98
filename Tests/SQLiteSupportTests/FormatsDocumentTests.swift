import Foundation
import SQLiteSupport
import SyncBackend
import SyncServer
import Testing

@testable import SyncFS

/// Keeps doc/FORMATS.md true for the SQLite databases: each migrations table has one row per step
/// of its runner; the state database's facts table is exactly `StateFactKey`, with each fact's
/// Swift type; its tables table names exactly the tables and columns the migrations make; and the
/// SQL given for `container.db` and `tokens.db` makes exactly the schema their migrations make.
@Suite("doc/FORMATS.md matches the SQLite schemas and facts")
struct FormatsDocumentTests {
    static let document: String = {
        // #filePath is <package>/Tests/SQLiteSupportTests/FormatsDocumentTests.swift.
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        return (try? String(contentsOf: root.appendingPathComponent("doc/FORMATS.md"), encoding: .utf8)) ?? ""
    }()

    static var lines: [String] { document.components(separatedBy: "\n") }

    /// The rows (cells without the outer bars, header row dropped) of the first table after the
    /// line `heading`.
    static func tableRows(under heading: String) -> [[String]] {
        guard let start = lines.firstIndex(of: heading) else { return [] }
        var rows: [[String]] = []
        for line in lines[(start + 1)...] {
            guard line.hasPrefix("|") else {
                if !rows.isEmpty { break }
                continue
            }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            if cells.allSatisfy({ $0.allSatisfy { $0 == "-" } }) { continue }  // the separator row
            rows.append(cells)
        }
        return Array(rows.dropFirst())
    }

    /// The first ```sql block after the line `heading`.
    /// Every ```sql block under `heading`, up to the next heading of level 2 or 3, joined in
    /// order (a schema's first version, then what each migration adds).
    static func sqlBlock(under heading: String) -> String {
        guard let start = lines.firstIndex(of: heading) else { return "" }
        let end =
            lines[(start + 1)...].firstIndex { $0.hasPrefix("## ") || $0.hasPrefix("### ") } ?? lines.endIndex
        var blocks: [String] = []
        var index = start + 1
        while index < end, let open = lines[index..<end].firstIndex(of: "```sql"),
            let close = lines[(open + 1)..<end].firstIndex(of: "```")
        {
            blocks.append(lines[(open + 1)..<close].joined(separator: "\n"))
            index = close + 1
        }
        return blocks.joined(separator: "\n")
    }

    /// The words in backticks of `text`.
    static func quoted(_ text: String) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    // MARK: Migrations

    @Test(arguments: [
        ("#### `state.db` migrations", StateDatabaseSchema.migrations),
        ("#### `container.db` migrations", LocalContainerSchema.migrations),
        ("#### `tokens.db` migrations", TokenStoreSchema.migrations),
    ])
    func eachMigrationsTableHasOneRowPerStep(heading: String, migrations: SQLiteMigrations) {
        let versions = Self.tableRows(under: heading).map { $0.first ?? "" }
        #expect(!versions.isEmpty, "no table under \(heading)")
        #expect(versions == (1...migrations.latestVersion).map(String.init), "\(heading)")
    }

    // MARK: The state database

    /// The Swift type of each fact, by an exhaustive switch: a new case does not compile until
    /// it is named here (and then the table must list it).
    static func typeName(_ key: StateFactKey) -> String {
        func name<Value>(_ fact: StateFact<Value>) -> String {
            #expect(fact.key == key, "the fact named \(key) has the key \(fact.key)")
            return String(describing: Value.self)
        }
        switch key {
        case .containerID: return name(StateFact.containerID)
        case .container: return name(StateFact.container)
        case .mountpoint: return name(StateFact.mountpoint)
        case .tokenFile: return name(StateFact.tokenFile)
        case .caFile: return name(StateFact.caFile)
        case .deviceID: return name(StateFact.deviceID)
        case .deviceName: return name(StateFact.deviceName)
        case .mountCount: return name(StateFact.mountCount)
        case .nextIno: return name(StateFact.nextIno)
        case .feedCursor: return name(StateFact.feedCursor)
        case .deferredIDs: return name(StateFact.deferredIDs)
        case .treeAttached: return name(StateFact.treeAttached)
        case .sealed: return name(StateFact.sealed)
        case .lastSync: return name(StateFact.lastSync)
        case .writeFailures: return name(StateFact.writeFailures)
        case .guardHold: return name(StateFact.guardHold)
        case .excludedFolders: return name(StateFact.excludedFolders)
        case .bandwidthOverrides: return name(StateFact.bandwidthOverrides)
        case .paused: return name(StateFact.paused)
        case .accessRole: return name(StateFact.accessRole)
        }
    }

    @Test func theFactsTableIsEveryFactWithItsType() {
        let rows = Self.tableRows(under: "#### `state.db` facts")
        let documented = rows.map { Self.quoted($0[0]).first ?? $0[0] }
        #expect(documented.sorted() == StateFactKey.allCases.map(\.rawValue).sorted())
        for row in rows {
            guard let key = StateFactKey(rawValue: Self.quoted(row[0]).first ?? "") else { continue }
            #expect(Self.quoted(row[1]).first == Self.typeName(key), "the type of \(key.rawValue)")
        }
    }

    @Test func theTablesTableNamesEveryTableAndColumn() throws {
        let database = try ScratchDatabase()
        try MetadataStore(path: database.path).close()
        let actual = try Self.columns(of: database.connection())
        var documented: [String: [String]] = [:]
        for row in Self.tableRows(under: "#### `state.db` tables") {
            documented[Self.quoted(row[0]).first ?? row[0]] = Self.quoted(row[1])
        }
        #expect(Set(documented.keys) == Set(actual.keys))
        for (table, columns) in actual {
            #expect(documented[table] == columns.map(\.name), "the columns of \(table)")
        }
    }

    // MARK: container.db and tokens.db

    @Test(arguments: [
        ("### `container.db`", LocalContainerSchema.migrations),
        ("## Server token database", TokenStoreSchema.migrations),
    ])
    func theDocumentedSQLMakesTheMigratedSchema(heading: String, migrations: SQLiteMigrations) throws {
        let migrated = try ScratchDatabase()
        try migrations.migrate(migrated.connection())
        let documented = try ScratchDatabase()
        let sql = Self.sqlBlock(under: heading)
        #expect(!sql.isEmpty, "no SQL under \(heading)")
        try documented.connection().execute(sql)
        #expect(try Self.columns(of: documented.connection()) == Self.columns(of: migrated.connection()))
        #expect(try documented.objects() == migrated.objects())
    }

    struct Column: Equatable, CustomStringConvertible {
        var name: String
        var type: String
        var notNull: Bool
        var primaryKey: Bool
        var description: String { "\(name) \(type)\(notNull ? " NOT NULL" : "")\(primaryKey ? " PK" : "")" }
    }

    /// Every table's columns, in order.
    static func columns(of connection: SQLiteConnection) throws -> [String: [Column]] {
        let tables = try connection.statement(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        var names: [String] = []
        while try tables.step() { names.append(tables.text(0)) }
        var result: [String: [Column]] = [:]
        for table in names {
            let info = try connection.statement("PRAGMA table_info(\(table))")
            var columns: [Column] = []
            while try info.step() {
                columns.append(
                    Column(
                        name: info.text(1), type: info.text(2), notNull: info.int64(3) != 0,
                        primaryKey: info.int64(5) != 0))
            }
            result[table] = columns
        }
        return result
    }
}
