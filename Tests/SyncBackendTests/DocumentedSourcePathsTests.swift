import Foundation
import Testing

/// Keeps the docs' file references true: every source file a document names in backticks
/// (`Tree/LiveTree.swift`, `Uploader+Conflicts.swift`, `scripts/lint.sh`) exists, so a file that
/// is moved or renamed cannot leave a walkthrough pointing nowhere.
@Suite("The docs name only files that exist")
struct DocumentedSourcePathsTests {
    /// The package root (#filePath is <root>/Tests/SyncBackendTests/DocumentedSourcePathsTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every file below Sources/, Tests/ and scripts/, as paths relative to the root.
    static func repositoryFiles() -> [String] {
        var files: [String] = []
        for top in ["Sources", "Tests", "scripts", "dist"] {
            let base = root.appendingPathComponent(top)
            guard let walker = FileManager.default.enumerator(atPath: base.path) else { continue }
            while let path = walker.nextObject() as? String { files.append(top + "/" + path) }
        }
        return files
    }

    /// The backticked names of source files and scripts in `text`.
    static func namedFiles(in text: String) -> Set<String> {
        let pattern = try! NSRegularExpression(pattern: "`((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_+-]+\\.(?:swift|sh|py))`")
        let range = NSRange(text.startIndex..., in: text)
        return Set(
            pattern.matches(in: text, range: range).compactMap { match in
                Range(match.range(at: 1), in: text).map { String(text[$0]) }
            })
    }

    /// The documents checked: the fixed ones and every decision record.
    static let documents: [String] =
        [
            "doc/ARCHITECTURE.md", "doc/SEMANTICS.md", "doc/SECURITY.md", "doc/FORMATS.md", "doc/DEVELOPMENT.md",
            "doc/PERFORMANCE.md", "doc/CRYPTO.md", "README.md",
        ] + decisionRecords().map { "doc/decisions/" + $0 }

    /// The numbered decision records (`NNN-title.md`) in doc/decisions/, sorted.
    static func decisionRecords() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path + "/doc/decisions")) ?? []
        return names.filter { $0.range(of: "^[0-9]{3}-.+\\.md$", options: .regularExpression) != nil }.sorted()
    }

    @Test(arguments: documents)
    func everyNamedFileExists(document: String) throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent(document), encoding: .utf8)
        let named = Self.namedFiles(in: text)
        #expect(!named.isEmpty || document != "doc/ARCHITECTURE.md", "ARCHITECTURE.md names source files")
        let files = Self.repositoryFiles()
        for name in named.sorted() {
            let found = files.contains { $0 == name || $0.hasSuffix("/" + name) }
            #expect(found, "\(document) names `\(name)`, which is not in Sources/, Tests/, scripts/ or dist/")
        }
    }

    /// The index of decision records links every numbered record, and each number is used once.
    @Test func theDecisionIndexListsEveryRecord() throws {
        let records = Self.decisionRecords()
        #expect(!records.isEmpty, "doc/decisions/ holds no NNN-title.md record")
        let index = try String(contentsOf: Self.root.appendingPathComponent("doc/decisions/README.md"), encoding: .utf8)
        for record in records {
            #expect(index.contains("(\(record))"), "doc/decisions/README.md does not link \(record)")
        }
        let numbers = records.map { $0.prefix(3) }
        #expect(Set(numbers).count == numbers.count, "two decision records share a number: \(records)")
    }

    @Test func theCheckFindsAMissingFile() {
        let named = Self.namedFiles(in: "see `Tree/NoSuchFile.swift` and `scripts/lint.sh`")
        #expect(named == ["Tree/NoSuchFile.swift", "scripts/lint.sh"])
        #expect(!Self.repositoryFiles().contains { $0.hasSuffix("/Tree/NoSuchFile.swift") })
    }
}
