import Foundation
import TestSupport

/// Roles on the embedded server as an administrator sets them (doc/SEMANTICS.md, "A viewer's
/// mount"): straight in its `tokens.db` with `sqlite3`, which the server reads at every request.
extension ServerProcess {
    /// Makes the token labelled `label` (made by `createToken`) a viewer's in `container`: a
    /// user with a viewer's membership there, and the token scoped to that user and role.
    func makeViewer(label: String, user: String, container: String) throws {
        try runTokenSQL(
            """
            INSERT INTO users (name, created) VALUES ('\(user)', 0);
            INSERT INTO memberships (user, container, role) VALUES ('\(user)', '\(container)', 'viewer');
            UPDATE tokens SET user = '\(user)', role = 'viewer' WHERE label = '\(label)';
            """)
    }

    /// Sets the role of the token labelled `label` (a legacy token: its role is at most an editor's).
    func setTokenRole(label: String, _ role: String) throws {
        try runTokenSQL("UPDATE tokens SET role = '\(role)' WHERE label = '\(label)';")
    }

    private func runTokenSQL(_ sql: String) throws {
        let result = ModelProcess.run(
            ["/usr/bin/sqlite3", "-cmd", ".timeout 5000", root + "/.syncfs-server/tokens.db", sql], timeout: 30)
        guard result.ok else { throw TestFolderError(message: "sqlite3 on tokens.db failed: \(result)") }
    }
}
