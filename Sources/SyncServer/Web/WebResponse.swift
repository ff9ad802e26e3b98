import HTTPTypes
import Hummingbird
import NIOCore

/// The web page's responses: HTML with the headers every page carries, redirects, and the
/// headers that keep a page and a user's file apart.
///
/// Every page: a Content-Security-Policy that allows scripts, styles and images from this origin
/// only (no inline script or style, no plugin, no framing by another site, forms posting only
/// here), `nosniff`, `Referrer-Policy: same-origin` and `Cache-Control: no-store` (a page may show
/// names a shared machine's next user should not find in its cache).
enum WebResponse {
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; connect-src 'self'; "
        + "frame-src 'self'; form-action 'self'; frame-ancestors 'self'; base-uri 'none'"

    /// What a user's file is served with when shown inline (an image, a PDF): no script of its own
    /// may run on this origin, whatever the file holds.
    static let fileContentSecurityPolicy = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"

    static func html(_ text: String, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = pageHeaders
        fields[.contentType] = "text/html; charset=utf-8"
        fields.append(contentsOf: headers)
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// A `303 See Other` to `location`, which must be a path on this server (`/…`, never `//…`):
    /// the page never redirects elsewhere.
    static func redirect(to location: String, headers: HTTPFields = [:]) -> Response {
        precondition(WebPaths.isLocal(location), "a redirect stays on this server")
        var fields = pageHeaders
        fields[.location] = location
        fields.append(contentsOf: headers)
        return Response(status: .seeOther, headers: fields)
    }

    /// A static asset (CSS, JavaScript): cached for a day (its URL changes with its content).
    static func asset(_ text: String, contentType: String) -> Response {
        var fields = pageHeaders
        fields[.contentType] = contentType
        fields[.cacheControl] = "public, max-age=86400, immutable"
        return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static var pageHeaders: HTTPFields {
        [
            .contentSecurityPolicy: contentSecurityPolicy,
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("Referrer-Policy")!: "same-origin",
            HTTPField.Name("X-Frame-Options")!: "SAMEORIGIN",
            HTTPField.Name("Cross-Origin-Opener-Policy")!: "same-origin",
            .cacheControl: "no-store",
        ]
    }
}
