import Foundation
import TestSupport
import Testing

/// `syncfs-mount init --encrypted` for the mount tests: makes an encrypted local container with
/// the device key at `deviceKey`, and keeps the recovery key it prints once in a private file.
struct EncryptedContainerInit {
    let container: String
    /// The recovery key's text (`SFR1-…`), as `init` printed it.
    let recoveryText: String
    /// A 0600 file holding it, for `--recovery-key-file`.
    let recoveryFile: String

    static func make(at container: String, deviceKey: String, recoveryFile: String) throws -> EncryptedContainerInit {
        let made = ModelProcess.run(
            [try TestFolder.binaryPath(), "init", "--encrypted", container, "--device-key", deviceKey], timeout: 60)
        try #require(made.ok, "\(made)")
        let text = try #require(
            made.stdout.range(of: "SFR1(-[A-Z2-7]{1,4}){14}", options: .regularExpression).map {
                String(made.stdout[$0])
            }, "\(made)")
        try #require(
            FileManager.default.createFile(
                atPath: recoveryFile, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
        return EncryptedContainerInit(container: container, recoveryText: text, recoveryFile: recoveryFile)
    }
}
