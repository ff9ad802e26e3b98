import Crypto
import Mustache

/// The web page's templates (`WebTemplateTexts`) compiled once, and the shared parts of every
/// page's context.
struct WebTemplates: Sendable {
    let library: MustacheLibrary

    init() {
        MustacheContentTypes.register(WebHTMLEscaping(), named: WebHTMLEscaping.name)
        var library = MustacheLibrary()
        for (name, text) in WebTemplateTexts.all {
            do {
                try library.register(WebHTMLEscaping.pragma + text, named: name)
            } catch {
                preconditionFailure("the template \(name) does not parse: \(error)")
            }
        }
        self.library = library
    }

    /// `context` rendered with template `name` (one of `WebTemplateTexts.all`).
    func render(_ name: String, _ context: Any) -> String {
        guard let text = library.render(context, withTemplate: name) else {
            preconditionFailure("no template \(name)")
        }
        return text
    }
}

/// What every page's context has: its title, the assets, and the signed-in user with the token
/// their forms carry (nil when signed out).
struct WebFrame: Sendable {
    let title: String
    let user: String?
    let csrf: String?
    let css = WebAssets.stylePath
    let js = WebAssets.scriptPath

    init(title: String, signed: WebSessions.Signed?) {
        self.title = title
        self.user = signed?.session.user
        self.csrf = signed?.csrf
    }
}

/// How every template escapes what it is given: each Unicode scalar on its own, so `&`, `<`,
/// `>`, `"` and `'` are replaced wherever they stand, also at the start of a grapheme cluster
/// with combining or prepended marks (which an escape by `Character` would pass through whole).
struct WebHTMLEscaping: MustacheContentType {
    static let name = "SYNCFS_HTML"
    /// Put before every template: its escaping is this one (a partial gets its own pragma too).
    static let pragma = "{{% CONTENT_TYPE: \(name)}}"

    func escapeText(_ text: String) -> String { Self.escape(text) }

    static func escape(_ text: String) -> String {
        var escaped = String.UnicodeScalarView()
        escaped.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped.append(contentsOf: "&amp;".unicodeScalars)
            case "<": escaped.append(contentsOf: "&lt;".unicodeScalars)
            case ">": escaped.append(contentsOf: "&gt;".unicodeScalars)
            case "\"": escaped.append(contentsOf: "&quot;".unicodeScalars)
            case "'": escaped.append(contentsOf: "&#39;".unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }
}
