import Foundation
import NIOSSL

/// A PEM certificate chain and its private key, for serving HTTPS.
public struct TLSFiles: Sendable, Equatable {
    public var certificatePath: String
    public var keyPath: String

    public init(certificatePath: String, keyPath: String) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
    }

    /// The server's TLS configuration (TLS 1.2 or newer). Throws `badInput` with a message that
    /// names the file when one is missing, unreadable, not PEM, or when the key does not belong
    /// to the certificate.
    func serverConfiguration() throws(SyncServerError) -> TLSConfiguration {
        try Self.checkReadable(certificatePath, what: "certificate")
        try Self.checkReadable(keyPath, what: "private key")
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(certificatePath)
        } catch {
            throw SyncServerError(.badInput, "\(certificatePath) is not a PEM certificate: \(error)")
        }
        guard !certificates.isEmpty else {
            throw SyncServerError(.badInput, "\(certificatePath) holds no PEM certificate")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
        } catch {
            throw SyncServerError(.badInput, "\(keyPath) is not a PEM private key: \(error)")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificates.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        do {
            // Builds the context now: BoringSSL refuses a key that does not match the certificate.
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw SyncServerError(
                .badInput, "the key \(keyPath) does not fit the certificate \(certificatePath): \(error)")
        }
        return configuration
    }

    private static func checkReadable(_ path: String, what: String) throws(SyncServerError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw SyncServerError(.badInput, "the TLS \(what) \(path) does not exist")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw SyncServerError(.badInput, "the TLS \(what) \(path) is not readable")
        }
    }
}
