import ArgumentParser
import Foundation
import SyncBackend
import SyncFS
import SyncServer

extension TokenCommand.Create {
    /// `token create --user NAME --container C… [--role R] [--expires D | --no-expiry]`: a user's
    /// token, printed once on standard output (its ID, role and expiry on standard error).
    func createForUser() throws {
        let place = AccessPlaceOptions(root: root, database: database)
        let (user, containers, label, role) = (user ?? "", container, label, role)
        var expiry = AccountAdmin.Expiry.standard
        if noExpiry { expiry = .never }
        if let expires, case .success(let seconds) = DurationText.seconds(expires) { expiry = .after(Int64(seconds)) }
        let made = expiry
        let (record, token) = try place.withAdmin { admin throws(SyncServerError) in
            let memberships = try await admin.store.roles(user: user)
            let granted = role ?? containers.compactMap { memberships[$0] }.min() ?? .viewer
            return try await admin.createToken(
                user: user, containers: containers, role: granted, expiry: made, label: label)
        }
        print(token)
        let until = record.expires.map { "until \(isoTime($0))" } ?? "without expiry (a service token)"
        printError(
            "token \(record.id) for '\(user)' created: \(record.role.rawValue) in \(record.containers.joined(separator: ", ")), "
                + "\(until); it is shown only this once")
    }
}

extension AccessPlaceOptions {
    init(root: String?, database: String?) {
        self.init()
        self.root = root
        self.database = database
    }
}
