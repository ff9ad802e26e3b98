import Foundation
import NIOSSL

/// A failed TLS connection, described for people: what failed and what to do, in one line, with
/// no library internals (BoringSSL error stacks name source files of the build).
///
/// - **Certificate not accepted** (`CERTIFICATE_VERIFY_FAILED`: not signed by a trusted
///   authority, self-signed, expired or not yet valid): says so and suggests `--ca-file FILE`;
///   when a CA file is given and one of its certificates is outside its validity period, says
///   that instead (the likeliest cause).
/// - **Certificate for another name**: names the host the URL asked for and suggests checking it.
/// - **Any other handshake failure** (the port does not speak TLS, no common protocol version):
///   a plain sentence; a session that **broke off** later says so.
/// A failure that is not TLS's is nil: the caller keeps its own description.
public enum TLSFailure {
    /// The kinds of failure `describe` tells apart (for tests and callers that act on them).
    public enum Kind: Sendable, Equatable {
        case untrustedCertificate
        case wrongHostName
        case handshake
        /// The TLS session broke off after the handshake (closed without a TLS goodbye, a
        /// protocol error in the middle of an answer).
        case brokenOff
    }

    /// What kind of TLS failure `error` is, or nil if it is not one.
    public static func kind(of error: any Error) -> Kind? {
        if let extra = error as? NIOSSLExtraError {
            return extra == .failedToValidateHostname ? .wrongHostName : .handshake
        }
        guard let ssl = error as? NIOSSLError else { return nil }
        switch ssl {
        case .handshakeFailed(let boring):
            return "\(boring)".contains("CERTIFICATE_VERIFY_FAILED") ? .untrustedCertificate : .handshake
        case .noCertificateToValidate, .unableToValidateCertificate, .cannotMatchULabel:
            return .untrustedCertificate
        default:
            return .brokenOff
        }
    }

    /// A one-line message for `error` met connecting to `origin` (`https://HOST:PORT`) with the
    /// given `caFile`, or nil if `error` is not a TLS failure.
    public static func describe(_ error: any Error, origin: String, host: String, caFile: String?) -> String? {
        guard let kind = kind(of: error) else { return nil }
        switch kind {
        case .untrustedCertificate:
            if let caFile, let expiry = outOfDate(caFile) {
                return "the TLS certificate of \(origin) is not accepted: the certificate in \(caFile) \(expiry); "
                    + "renew the server's certificate and give the new one with --ca-file"
            }
            if let caFile {
                return "the TLS certificate of \(origin) is not accepted: it is not signed by the certificates in "
                    + "\(caFile), or it expired; check that --ca-file names the server's certificate (or its CA)"
            }
            return "the TLS certificate of \(origin) is not trusted by this system (self-signed, from an "
                + "unknown authority, or expired); if the server uses its own certificate, give it with "
                + "--ca-file FILE"
        case .wrongHostName:
            return "the TLS certificate of \(origin) is not issued for the host name '\(host)'; check the host "
                + "name in the URL (it must be one the certificate names)"
        case .handshake:
            return "the TLS handshake with \(origin) failed (does the server speak HTTPS on this port?)"
        case .brokenOff:
            return "the TLS connection to \(origin) broke off"
        }
    }

    /// "expired on DATE" or "is valid only from DATE" for the first certificate in `caFile`
    /// outside its validity period now; nil if all are valid (or the file cannot be read).
    static func outOfDate(_ caFile: String, now: Date = Date()) -> String? {
        guard let certificates = try? NIOSSLCertificate.fromPEMFile(caFile) else { return nil }
        let seconds = time_t(now.timeIntervalSince1970)
        let format = ISO8601DateFormatter()
        for certificate in certificates {
            if certificate.notValidAfter < seconds {
                return "expired on "
                    + format.string(from: Date(timeIntervalSince1970: TimeInterval(certificate.notValidAfter)))
            }
            if certificate.notValidBefore > seconds {
                return "is valid only from "
                    + format.string(from: Date(timeIntervalSince1970: TimeInterval(certificate.notValidBefore)))
            }
        }
        return nil
    }
}
