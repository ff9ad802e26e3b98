import ArgumentParser
import Foundation
import SyncBackend
import SyncFS
import SyncServer

/// `syncfs-mount user add|list|disable|enable|enrol|passwd|totp`: the accounts of a server (doc/CLI.md).
struct UserCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "Manage the user accounts of a server.",
        subcommands: [Add.self, List.self, Disable.self, Enable.self, Enrol.self, Passwd.self, TOTPCommand.self]
    )

    /// `user add NAME`: prints a one-time enrolment code (and only it) on standard output.
    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a user; print a one-time enrolment code for their first login.")
        @OptionGroup var place: AccessPlaceOptions
        @Argument(help: "The user's name (a-z 0-9 . _ - @).") var name: String

        func run() throws {
            let name = name
            let code = try place.withAdmin { admin throws(SyncServerError) in try await admin.addUser(name) }
            print(code)
            printError(
                "user '\(name)' added; the enrolment code above is shown only this once and is good for "
                    + "one login within 7 days (`syncfs-mount login URL --user \(name)`)")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the users.")
        @OptionGroup var place: AccessPlaceOptions
        @Flag(help: "Print one JSON array: name, created, disabled, password, totp.") var json = false

        struct Line: Codable {
            var name: String
            var created: Int64
            var disabled: Int64?
            var password: Bool
            var totp: Bool
        }

        func run() throws {
            let users = try place.withAdmin { admin throws(SyncServerError) in try await admin.users() }
            let lines = users.map {
                Line(
                    name: $0.name, created: $0.created, disabled: $0.disabled, password: $0.passwordHash != nil,
                    totp: $0.totpSecret != nil)
            }
            if json { return print(jsonLine(lines)) }
            guard !lines.isEmpty else { return printError("no users") }
            let widths = [24, 21, 9, 5]
            print(tableRow(["NAME", "CREATED", "PASSWORD", "TOTP", "STATUS"], widths: widths))
            for line in lines {
                print(
                    tableRow(
                        [
                            line.name, isoTime(line.created), line.password ? "yes" : "no", line.totp ? "yes" : "no",
                            line.disabled.map { "disabled " + isoTime($0) } ?? "enabled",
                        ], widths: widths))
            }
        }
    }

    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable a user: all their tokens and devices stop working at once.")
        @OptionGroup var place: AccessPlaceOptions
        @Argument(help: "The user's name.") var name: String

        func run() throws {
            let name = name
            let changed = try place.withAdmin { admin throws(SyncServerError) in
                try await admin.setDisabled(name, true)
            }
            printError(changed ? "user '\(name)' disabled" : "user '\(name)' was disabled already")
        }
    }

    struct Enable: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable a disabled user again.")
        @OptionGroup var place: AccessPlaceOptions
        @Argument(help: "The user's name.") var name: String

        func run() throws {
            let name = name
            let changed = try place.withAdmin { admin throws(SyncServerError) in
                try await admin.setDisabled(name, false)
            }
            printError(changed ? "user '\(name)' enabled" : "user '\(name)' was enabled already")
        }
    }

    struct Enrol: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a new one-time enrolment code for a user (a new machine, a lost password).")
        @OptionGroup var place: AccessPlaceOptions
        @Argument(help: "The user's name.") var name: String

        func run() throws {
            let name = name
            let code = try place.withAdmin { admin throws(SyncServerError) in try await admin.enrol(name) }
            print(code)
            printError("enrolment code for '\(name)': shown only this once, good for one login within 7 days")
        }
    }
}

extension UserCommand {
    /// `user passwd NAME`: the new password from `--password-file` (its first line) or typed twice.
    struct Passwd: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set a user's password (at least 10 characters).")
        @OptionGroup var place: AccessPlaceOptions
        @Option(
            help: ArgumentHelp(
                "Read the password from this file's first line instead of asking (for scripts).", valueName: "file"))
        var passwordFile: String?
        @Argument(help: "The user's name.") var name: String

        func run() throws {
            let password = try Secrets.read(file: passwordFile, prompt: "New password for \(name): ", confirm: true)
            let name = name
            try place.withAdmin { admin throws(SyncServerError) in try await admin.setPassword(name, to: password) }
            printError("password of '\(name)' set")
        }
    }

    /// `user totp NAME [--disable]`: prints the new secret and its `otpauth:` URI once.
    struct TOTPCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "totp",
            abstract: "Give a user a new TOTP secret (printed once), or remove it with --disable.")
        @OptionGroup var place: AccessPlaceOptions
        @Flag(help: "Remove the user's TOTP secret: logins need the password alone again.") var disable = false
        @Argument(help: "The user's name.") var name: String

        func run() throws {
            let (name, enable) = (name, !disable)
            let made = try place.withAdmin { admin throws(SyncServerError) in
                try await admin.setTOTP(name, enable: enable)
            }
            guard let made else { return printError("TOTP of '\(name)' removed") }
            print(made.uri)
            printError(
                "TOTP secret of '\(name)': \(made.secret) — add it (or the URI above) to an authenticator app; "
                    + "it is shown only this once, and each login now needs its code")
        }
    }
}

/// `syncfs-mount member add|remove|list`: who may do what in which container.
struct MemberCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "member",
        abstract: "Manage the members of a server's containers and their roles.",
        subcommands: [Add.self, Remove.self, List.self]
    )

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give a user a role in a container (viewer, editor, admin), replacing their role there.")
        @OptionGroup var place: AccessPlaceOptions
        @Option(help: ArgumentHelp("The user.", valueName: "name")) var user: String
        @Option(help: ArgumentHelp("The container.", valueName: "name")) var container: String
        @Option(help: ArgumentHelp("viewer, editor or admin.", valueName: "role")) var role: AccessRole

        func run() throws {
            let (user, container, role) = (user, container, role)
            try place.withAdmin { admin throws(SyncServerError) in
                try await admin.setMember(user: user, container: container, role: role)
            }
            printError("'\(user)' is now \(role.withArticle) in '\(container)'")
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a user from a container: their tokens stop opening it at once.")
        @OptionGroup var place: AccessPlaceOptions
        @Option(help: ArgumentHelp("The user.", valueName: "name")) var user: String
        @Option(help: ArgumentHelp("The container.", valueName: "name")) var container: String

        func run() throws {
            let (user, container) = (user, container)
            let removed = try place.withAdmin { admin throws(SyncServerError) in
                try await admin.removeMember(user: user, container: container)
            }
            printError(
                removed ? "'\(user)' removed from '\(container)'" : "'\(user)' was not a member of '\(container)'")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the members (of one container).")
        @OptionGroup var place: AccessPlaceOptions
        @Option(help: ArgumentHelp("Only this container.", valueName: "name")) var container: String?
        @Flag(help: "Print one JSON array: user, container, role.") var json = false

        func run() throws {
            let container = container
            let members = try place.withAdmin { admin throws(SyncServerError) in
                try await admin.members(container: container)
            }
            if json { return print(jsonLine(members)) }
            guard !members.isEmpty else { return printError("no members") }
            let widths = [33, 24]
            print(tableRow(["CONTAINER", "USER", "ROLE"], widths: widths))
            for member in members {
                print(tableRow([member.container, member.user, member.role.rawValue], widths: widths))
            }
        }
    }
}

extension AccessRole: ExpressibleByArgument {}

/// `syncfs-mount device list|revoke`: the machines users logged in from.
struct DeviceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "List or revoke the devices users logged in from.",
        subcommands: [List.self, Revoke.self]
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the devices (of one user).")
        @OptionGroup var place: AccessPlaceOptions
        @Option(help: ArgumentHelp("Only this user's.", valueName: "name")) var user: String?
        @Flag(help: "Print one JSON array: id, user, name, created, revoked.") var json = false

        func run() throws {
            let user = user
            let devices = try place.withAdmin { admin throws(SyncServerError) in try await admin.devices(user: user) }
            if json { return print(jsonLine(devices)) }
            guard !devices.isEmpty else { return printError("no devices") }
            let widths = [8, 24, 21, 29]
            print(tableRow(["ID", "USER", "CREATED", "STATUS", "NAME"], widths: widths))
            for device in devices {
                print(
                    tableRow(
                        [
                            device.id, device.user, isoTime(device.created),
                            device.revoked.map { "revoked " + isoTime($0) } ?? "valid", TerminalText.safe(device.name),
                        ], widths: widths))
            }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a device: every token made for it stops working at once.")
        @OptionGroup var place: AccessPlaceOptions
        @Argument(help: "The device's ID (8 hex digits).") var id: String

        func run() throws {
            let id = id
            let revoked = try place.withAdmin { admin throws(SyncServerError) in try await admin.revokeDevice(id) }
            printError(revoked ? "device \(id) revoked" : "device \(id) was already revoked")
        }
    }
}
