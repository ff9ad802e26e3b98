import Testing

@testable import SyncBackend

/// `BandwidthRate.parse`: RATE's units (binary K/M/G, decimal kB/MB/GB), `off`, and a clear
/// refusal — never a crash or a silent clamp — for what is not a rate.
@Suite struct BandwidthRateTests {
    @Test(
        arguments: [
            ("512", 512), ("1B", 1), ("512K", 512 * 1024), ("2M", 2 << 20), ("2m", 2 << 20), ("2MiB", 2 << 20),
            ("2 MiB", 2 << 20), ("2M/s", 2 << 20), ("1G", 1 << 30), ("1GiB", 1 << 30), ("1T", 1 << 40),
            ("10MB", 10_000_000), ("10kB", 10_000), ("1GB", 1_000_000_000), ("1.5M", 3 << 19), (" 64K ", 64 << 10),
        ] as [(String, Int64)])
    func parsesUnits(_ text: String, _ bytes: Int64) throws {
        #expect(try BandwidthRate.parse(text)?.bytesPerSecond == bytes)
    }

    @Test(arguments: ["off", "OFF", "0", "0M", "0.0K"])
    func offAndZeroAreNoLimit(_ text: String) throws {
        #expect(try BandwidthRate.parse(text) == nil)
    }

    @Test(arguments: [
        "", "-1", "-2M", "abc", "2X", "2 MB MB", "1e9", "1.2.3M", "99999999999999999999G", "2P",
        "0.5", "1.0.", "M", ".", String(repeating: "9", count: 400), "١٢M",
    ])
    func refusesWhatIsNotARate(_ text: String) {
        #expect(throws: BandwidthRate.ParseError.self) { try BandwidthRate.parse(text) }
        do {
            _ = try BandwidthRate.parse(text)
        } catch {
            #expect(error.description.contains("is not a rate"), "\(error)")
            #expect(error.description.count < 400, "the message quotes at most a prefix")
        }
    }

    @Test func theMaximumIsAcceptedAndOneMoreIsNot() throws {
        #expect(try BandwidthRate.parse("1024T")?.bytesPerSecond == BandwidthRate.maximum)
        #expect(throws: BandwidthRate.ParseError.self) { try BandwidthRate.parse("1025T") }
    }

    @Test(arguments: ["100", "64K", "2M", "1536K", "3G", "1T", "10MB", "1.5M"])
    func textReadsBackToTheSameRate(_ text: String) throws {
        let rate = try #require(try BandwidthRate.parse(text))
        #expect(try BandwidthRate.parse(rate.text) == rate)
    }

    @Test func descriptionIsForPeople() throws {
        #expect(try BandwidthRate.parse("2M")?.description == "2 MiB/s")
        #expect(try BandwidthRate.parse("1.5M")?.description == "1.5 MiB/s")
        #expect(try BandwidthRate.parse("100")?.description == "100 B/s")
        #expect(Optional<BandwidthRate>.none.rateText == "off")
    }
}
