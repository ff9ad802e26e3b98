import SyncBackend
import Testing

@testable import SyncFS

/// The filter of committed base IDs (`BaseIDFilter`): never a false "no", rarely a false "maybe",
/// about 10 bits per ID however many it holds.
@Suite("BaseIDFilter: which IDs may have a committed sync base")
struct BaseIDFilterTests {
    /// Enough IDs for three layers.
    static let inserted = 4 * BaseIDFilter.firstCapacity

    @Test func everyInsertedIDIsFoundAcrossTheLayers() {
        var filter = BaseIDFilter()
        let ids = (0..<Self.inserted).map { _ in FileID.random() }
        for id in ids { filter.insert(id) }
        #expect(filter.count == ids.count)
        #expect(ids.allSatisfy { filter.mayContain($0) }, "a false no would answer a committed base as none")
    }

    @Test func fewOtherIDsAreTakenForInsertedOnes() {
        var filter = BaseIDFilter()
        for _ in 0..<Self.inserted { filter.insert(FileID.random()) }
        let probes = 100_000
        let falsePositives = (0..<probes).filter { _ in filter.mayContain(FileID.random()) }.count
        // Each layer alone answers a false yes about 0.8 % of the time; an ID is checked in three.
        #expect(falsePositives < probes * 4 / 100, "\(falsePositives) of \(probes)")
    }

    @Test func itTakesAboutTenBitsPerID() {
        var filter = BaseIDFilter()
        #expect(filter.byteCount == BaseIDFilter.firstCapacity * 10 / 8, "an empty filter is its first layer")
        for _ in 0..<Self.inserted { filter.insert(FileID.random()) }
        // Layers of 65,536, 131,072 and 262,144 IDs, the last a quarter full: 1.75 times the bits.
        #expect(filter.byteCount <= Self.inserted * 10 / 8 * 7 / 4)
    }
}
