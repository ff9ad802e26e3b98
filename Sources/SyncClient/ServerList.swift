/// Several addresses of one container, as `mount` takes them: `URL[,URL…]` (doc/CLI.md,
/// "Several servers"), tried in this order by `FailoverContainer`.
///
/// Invariants: 1 to `maxCount` addresses, each a valid `ServerAddress`, no two the same
/// (normalised). A comma never occurs in a valid address (not in a host, a port or a container
/// name), so the list parses unambiguously. The names may differ (servers behind different
/// proxies); that they are the same container is checked by ID at connect and on every request.
public struct ServerList: Equatable, Sendable, CustomStringConvertible {
    public let addresses: [ServerAddress]
    public static let maxCount = 8

    /// Whether `text` is one or more server URLs rather than a local container path.
    public static func looksLikeList(_ text: String) -> Bool { ServerAddress.looksLikeURL(text) }

    public init(parsing text: String) throws(AddressError) {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= Self.maxCount else {
            throw AddressError("'\(text)' names \(parts.count) servers; at most \(Self.maxCount)")
        }
        var addresses: [ServerAddress] = []
        for part in parts {
            guard !part.isEmpty else { throw AddressError("'\(text)': an empty server URL between commas") }
            let address = try ServerAddress(parsing: part)
            guard !addresses.contains(address) else {
                throw AddressError("'\(text)' names \(address) twice")
            }
            addresses.append(address)
        }
        self.addresses = addresses
    }

    /// The first address: the one calls go to while it answers, and the one a mount keys its
    /// default state directory by (so adding a second server keeps the state directory).
    public var primary: ServerAddress { addresses[0] }

    /// The normalised list (`ServerAddress.description`s joined by commas).
    public var description: String { addresses.map(\.description).joined(separator: ",") }
}
