import SyncObservability
import Testing

/// `--metrics-listen`: a bare port is loopback; another host only when named.
@Suite
struct MetricsListenAddressTests {
    @Test func aBarePortOrColonPortIsLoopback() throws {
        for text in ["9464", ":9464"] {
            let address = try #require(MetricsListenAddress(parsing: text))
            #expect(address == MetricsListenAddress(host: "127.0.0.1", port: 9464))
            #expect(address.isLoopback)
        }
    }

    @Test func aNamedHostIsTakenAsGiven() throws {
        let any = try #require(MetricsListenAddress(parsing: "0.0.0.0:9464"))
        #expect(any.host == "0.0.0.0" && any.port == 9464 && !any.isLoopback)
        let v6 = try #require(MetricsListenAddress(parsing: "[::1]:0"))
        #expect(v6.host == "::1" && v6.port == 0 && v6.isLoopback && v6.description == "[::1]:0")
        #expect(MetricsListenAddress(parsing: "localhost:80")?.isLoopback == true)
    }

    @Test func anythingElseIsRefused() {
        for text in ["", ":", "host", "host:", "host:port", "65536", ":-1", "a:b:c", "[::1]", "[]:80", "1:2:3:4"] {
            #expect(MetricsListenAddress(parsing: text) == nil, "\(text)")
        }
    }
}
