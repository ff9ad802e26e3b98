import Synchronization

/// The transfers (downloads and uploads) share links have in progress, at most
/// `perServer` in all, `perAddress` from one address (IPv6 by its /64) and `perLink` through one
/// link. Link requests come without a token, so these caps keep slow or many link transfers from
/// taking what logins, other links and the members' own requests need (the token-less
/// connections, upload slots, memory). The web page keeps one of its own for its heavy requests
/// (listings, downloads, zips, deletes), with each session as a "link" (`WebPages.work`).
///
/// Contract: `enter` answers at once (no queue): a `Ticket`, or which cap is full. A ticket gives
/// its place back exactly once, when it is released — the end of the transfer, whatever ended it
/// (the response body's writer holds it).
final class LinkTraffic: Sendable {
    let perServer: Int
    let perAddress: Int
    let perLink: Int

    private struct Counts {
        var total = 0
        var addresses: [String: Int] = [:]
        var links: [String: Int] = [:]
    }

    private let counts = Mutex(Counts())

    init(perServer: Int = 32, perAddress: Int = 4, perLink: Int = 8) {
        self.perServer = perServer
        self.perAddress = perAddress
        self.perLink = perLink
    }

    enum Full: Error, Equatable {
        case server, address, link
    }

    /// One transfer's place; given back when released.
    final class Ticket: Sendable {
        private let traffic: LinkTraffic
        private let address: String
        private let link: String

        fileprivate init(_ traffic: LinkTraffic, address: String, link: String) {
            self.traffic = traffic
            self.address = address
            self.link = link
        }

        deinit { traffic.leave(address: address, link: link) }
    }

    func enter(address: String?, link: String) -> Result<Ticket, Full> {
        let key = LoginService.addressKey(address)
        let full = counts.withLock { counts -> Full? in
            if counts.total >= perServer { return .server }
            if counts.addresses[key, default: 0] >= perAddress { return .address }
            if counts.links[link, default: 0] >= perLink { return .link }
            counts.total += 1
            counts.addresses[key, default: 0] += 1
            counts.links[link, default: 0] += 1
            return nil
        }
        if let full { return .failure(full) }
        return .success(Ticket(self, address: key, link: link))
    }

    /// Transfers in progress (tests).
    var inProgress: Int { counts.withLock { $0.total } }

    private func leave(address: String, link: String) {
        counts.withLock { counts in
            counts.total -= 1
            counts.addresses[address, default: 1] -= 1
            if counts.addresses[address] == 0 { counts.addresses[address] = nil }
            counts.links[link, default: 1] -= 1
            if counts.links[link] == 0 { counts.links[link] = nil }
        }
    }
}
