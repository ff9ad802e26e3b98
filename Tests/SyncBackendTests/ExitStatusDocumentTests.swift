import Foundation
import SyncBackend
import Testing

/// Keeps doc/CLI.md's "Exit codes" table true: it lists exactly the statuses of `ExitStatus`, and
/// the systemd units only name statuses that exist.
@Suite struct ExitStatusDocumentTests {
    /// The package root (#filePath is <package>/Tests/SyncBackendTests/ExitStatusDocumentTests.swift).
    static let root: URL = {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        return root
    }()

    static func text(_ path: String) -> String {
        (try? String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)) ?? ""
    }

    /// The first cell of each row of the table under "## Exit codes" in doc/CLI.md.
    static func documentedCodes() -> [String] {
        let lines = text("doc/CLI.md").components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: "## Exit codes") else { return [] }
        var codes: [String] = []
        var inTable = false
        for line in lines[(start + 1)...] {
            if line.hasPrefix("## ") { break }
            guard line.hasPrefix("|") else {
                if inTable { break }
                continue
            }
            inTable = true
            let first =
                line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().first
                .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            codes.append(first)
        }
        return Array(codes.dropFirst(2))  // the header and separator rows
    }

    @Test func theTableListsEveryExitStatusOnceInOrder() {
        let documented = Self.documentedCodes()
        #expect(!documented.isEmpty, "doc/CLI.md has no \"## Exit codes\" table")
        #expect(documented == ExitStatus.allCases.map { String($0.rawValue) })
    }

    @Test func theSystemdUnitsPreventRestartsOnlyForStatusesThatExist() throws {
        for unit in ["dist/systemd/user/syncfs@.service", "dist/systemd/system/syncfs@.service"] {
            let line = try #require(
                Self.text(unit).split(separator: "\n").first { $0.hasPrefix("RestartPreventExitStatus=") }, "\(unit)")
            let codes = line.dropFirst("RestartPreventExitStatus=".count).split(separator: " ").map { Int32($0) }
            // A usage error, bad input or a permission problem stays so on a restart.
            #expect(codes == [ExitStatus.usage, .badInput, .permissionDenied].map(\.rawValue), "\(unit)")
        }
    }
}
