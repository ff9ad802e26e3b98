import Foundation
import SyncBackend

/// The web page's URLs, made in one place: every name and path in them percent-encoded, so a
/// name can never become another URL, parameter or fragment.
///
/// - `/` the containers; `/login`, `/logout`; `/sessions`;
/// - `/c/NAME/?path=P` a folder (`sort`, `order`, `filter`, `page`);
/// - `/c/NAME/file?path=P` a file; `/c/NAME/raw?path=P` its content (`&inline=1` to show it);
/// - `/c/NAME/zip?path=P` a folder as a zip;
/// - `/static/…` the style sheet and the script.
enum WebPaths {
    static func folder(_ container: String, _ path: String, query: [(String, String)] = []) -> String {
        "/c/\(component(container))/" + queryString([("path", path)].filter { !$0.1.isEmpty } + query)
    }

    static func file(_ container: String, _ path: String) -> String {
        "/c/\(component(container))/file" + queryString([("path", path)])
    }

    static func raw(_ container: String, _ path: String, inline: Bool = false, version: EntryVersion? = nil) -> String {
        "/c/\(component(container))/raw"
            + queryString(
                [("path", path)] + (inline ? [("inline", "1")] : []) + (version.map { [("version", String($0))] } ?? [])
            )
    }

    /// Where a share link's secret is appended: the link's own endpoints (doc/PROTOCOL.md).
    static let linkPrefix = "/v1/links/"

    static func trash(_ container: String, before: EntryVersion?) -> String {
        "/c/\(component(container))/trash" + queryString(before.map { [("before", String($0))] } ?? [])
    }

    static func zip(_ container: String, _ path: String) -> String {
        "/c/\(component(container))/zip" + queryString([("path", path)].filter { !$0.1.isEmpty })
    }

    /// Where a change of `container` is posted: `/c/NAME/ACTION` (`mkdir`, `rename`, `move`,
    /// `delete`; the upload calls `missing`, `chunk`, `commit`).
    static func action(_ container: String, _ action: String) -> String { "/c/\(component(container))/\(action)" }

    /// Whether `location` is a path on this server: `/` then anything but a second `/` or `\`
    /// (which browsers read as another host).
    static func isLocal(_ location: String) -> Bool {
        let bytes = Array(location.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        guard bytes.count > 1 else { return true }
        return bytes[1] != UInt8(ascii: "/") && bytes[1] != UInt8(ascii: "\\")
            && !bytes.contains { $0 < 0x20 || $0 == 0x7F }
    }

    /// Characters left as they are in a path component or query value: RFC 3986's unreserved.
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    static func component(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    static func queryString(_ items: [(String, String)]) -> String {
        guard !items.isEmpty else { return "" }
        return "?" + items.map { component($0.0) + "=" + component($0.1) }.joined(separator: "&")
    }
}
