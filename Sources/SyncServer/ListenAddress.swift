/// Where the server listens: `HOST:PORT`, with an IPv6 host in brackets (`[::1]:8443`). Port 0
/// asks the system for a free port (the real one is reported once bound).
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// The host without brackets (`127.0.0.1`, `::1`, `localhost`, `0.0.0.0`).
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` or `[IPV6]:PORT`; nil if malformed or the port is not 0...65535.
    public init?(parsing text: String) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
            guard host.contains(":") else { return nil }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else { return nil }  // IPv6 needs brackets
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "/" || $0 == "[" || $0 == "]" }),
            (1...5).contains(portText.count), portText.allSatisfy({ $0.isASCII && $0.isNumber }),
            let port = Int(portText), (0...65_535).contains(port)
        else { return nil }
        self.init(host: String(host), port: port)
    }

    /// `HOST:PORT`, the host in brackets if it is IPv6.
    public var description: String { (host.contains(":") ? "[\(host)]" : host) + ":\(port)" }

    /// Whether only this machine can reach the address.
    public var isLoopback: Bool { host == "localhost" || host == "::1" || host.hasPrefix("127.") }
}
