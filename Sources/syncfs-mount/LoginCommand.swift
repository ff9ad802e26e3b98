import ArgumentParser
import Foundation
import SyncBackend
import SyncClient
import SyncFS

/// `syncfs-mount login https://HOST:PORT/NAME --user NAME`: logs in with the user's password (or
/// an enrolment code from `user add`, setting the password), registers this machine as a device
/// and stores its token (0600) where `mount URL` finds it without `--token-file`.
struct LoginCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Log in to a server's container; store this device's token for mount.")

    @Argument(help: "The container on the server: https://HOST:PORT/NAME.")
    var url: String

    @Option(help: ArgumentHelp("Your user name on the server.", valueName: "name"))
    var user: String

    @Option(help: ArgumentHelp("What to call this machine (default: its host name).", valueName: "name"))
    var device: String?

    @Option(help: ArgumentHelp("Read the password from this file's first line instead of asking.", valueName: "file"))
    var passwordFile: String?

    @Option(
        help: ArgumentHelp(
            "A first login: read the enrolment code (from `user add`) from this file, then set a password.",
            valueName: "file"))
    var enrolmentCodeFile: String?

    @Option(help: ArgumentHelp("With an enrolment code: read the new password from this file.", valueName: "file"))
    var newPasswordFile: String?

    @Option(help: ArgumentHelp("Read the TOTP code from this file instead of asking.", valueName: "file"))
    var totpFile: String?

    @Option(help: ArgumentHelp("Store the token here instead of the default place.", valueName: "file"))
    var tokenFile: String?

    @Option(help: ArgumentHelp("PEM certificates to trust for this server (as for mount).", valueName: "file"))
    var caFile: String?

    func validate() throws {
        let address: ServerAddress
        do { address = try ServerAddress(parsing: url) } catch { throw ValidationError(error.description) }
        guard address.isTLS || address.isLoopback else {
            throw ValidationError("a password goes only over https:// (or http:// to this machine): \(url)")
        }
        if enrolmentCodeFile == nil, newPasswordFile != nil {
            throw ValidationError("--new-password-file is for a first login with --enrolment-code-file")
        }
        if enrolmentCodeFile != nil, passwordFile != nil {
            throw ValidationError("--password-file and --enrolment-code-file exclude each other")
        }
    }

    func run() throws {
        umask(0o077)
        let address: ServerAddress
        do { address = try ServerAddress(parsing: url) } catch { throw ValidationError(error.description) }
        guard let path = tokenFile.map(absolutePath) ?? LoginTokenFile.defaultPath(for: address) else {
            throw ValidationError("no home directory to store the token in: give --token-file FILE")
        }
        var request = LoginRequest(
            user: user, container: address.name, device: device ?? ProcessInfo.processInfo.hostName)
        if let enrolmentCodeFile {
            request.enrolment = try Secrets.read(file: enrolmentCodeFile, prompt: "Enrolment code: ")
            request.newPassword = try Secrets.read(
                file: newPasswordFile, prompt: "Choose a password (at least 10 characters): ", confirm: true)
        } else {
            request.password = try Secrets.read(file: passwordFile, prompt: "Password for \(user): ")
        }
        var grant = try send(request, to: address)
        if grant == nil {
            request.totp = try Secrets.read(file: totpFile, prompt: "TOTP code: ")
            grant = try send(request, to: address)
        }
        guard let grant else { throw fail(LoginFailure("the server asked for a TOTP code again"), status: .badInput) }
        do throws(LoginFailure) {
            try LoginTokenFile.write(grant.token, to: path)
        } catch {
            throw fail(error, status: .cannotCreate)
        }
        let until = Date(timeIntervalSince1970: TimeInterval(grant.expires)).formatted(.iso8601)
        printError(
            "logged in as '\(grant.user)', \(grant.role.withArticle) in '\(grant.container)' (device \(grant.device), "
                + "token \(grant.tokenID) until \(until)); token stored in \(path)")
        printError("mount it with: syncfs-mount mount \(url) MOUNTPOINT")
    }

    /// The grant, or nil when the server wants a TOTP code.
    private func send(_ request: LoginRequest, to address: ServerAddress) throws -> LoginGrant? {
        let caFile = caFile.map(absolutePath)
        let result = blockOn { () async -> Result<LoginGrant, HTTPContainerError> in
            do throws(HTTPContainerError) {
                return .success(try await HTTPContainer.login(address: address, request, caFile: caFile))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let grant): return grant
        case .failure(.refused(let message)) where message.contains("TOTP") && request.totp == nil: return nil
        case .failure(.refused(let message)):
            throw fail(LoginFailure("the server refused the login: \(message)"), status: .badInput)
        case .failure(.setup(let message)), .failure(.tls(let message)):
            throw fail(LoginFailure(message), status: .badInput)
        case .failure(let error): throw fail(LoginFailure(error.description), status: .temporaryFailure)
        }
    }

    private func fail(_ error: LoginFailure, status: ExitStatus) -> ExitCode {
        printError("syncfs-mount: \(error.description)")
        return ExitCode(status)
    }
}
