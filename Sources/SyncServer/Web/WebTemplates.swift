import Crypto
import Mustache

/// The web page's templates (`WebTemplateTexts`) compiled once, and the shared parts of every
/// page's context.
struct WebTemplates: Sendable {
    let library: MustacheLibrary

    init() {
        var library = MustacheLibrary()
        for (name, text) in WebTemplateTexts.all {
            do {
                try library.register(text, named: name)
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
