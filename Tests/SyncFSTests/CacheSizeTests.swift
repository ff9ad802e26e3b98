import Testing

@testable import SyncFS

/// `--cache-size` (doc/CLI.md): bytes with an SI suffix (kB, MB, GB, TB: powers of 1000), an IEC
/// one (KiB, MiB, GiB, TiB) or the short K, M, G, T (powers of 1024), or a percentage.
@Suite struct CacheSizeTests {
    @Test func siSuffixesArePowersOf1000() {
        #expect(CacheSize(parsing: "20GB") == .bytes(20_000_000_000))
        #expect(CacheSize(parsing: "750kB") == .bytes(750_000))
        #expect(CacheSize(parsing: "500MB") == .bytes(500_000_000))
        #expect(CacheSize(parsing: "1TB") == .bytes(1_000_000_000_000))
        #expect(CacheSize(parsing: "1.5 GB") == .bytes(1_500_000_000))
        #expect(CacheSize(parsing: "20gb") == .bytes(20_000_000_000))
    }

    @Test func iecAndShortSuffixesArePowersOf1024() {
        #expect(CacheSize(parsing: "20GiB") == .bytes(20 << 30))
        #expect(CacheSize(parsing: "20G") == .bytes(20 << 30))
        #expect(CacheSize(parsing: "8MiB") == .bytes(8 << 20))
        #expect(CacheSize(parsing: "8m") == .bytes(8 << 20))
        #expect(CacheSize(parsing: "3KiB") == .bytes(3 << 10))
        #expect(CacheSize(parsing: "2TiB") == .bytes(2 << 40))
        #expect(CacheSize(parsing: "1048576") == .bytes(1_048_576))
        #expect(CacheSize(parsing: "25%") == .percentOfFilesystem(25))
    }

    @Test func anythingElseIsRefused() {
        for text in ["", "GB", "20XB", "20 G B", "-1GB", "0GB", "20GBB", "20iB", "abc", "120%", "1e30TB"] {
            #expect(CacheSize(parsing: text) == nil, "'\(text)'")
        }
    }
}
