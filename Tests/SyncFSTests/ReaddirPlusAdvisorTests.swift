import Testing

@testable import SyncFS

/// `ReaddirPlusReaders`: names only until a reader stats what it lists. Each test is
/// a sequence of READDIRPLUS pages (with the answer expected) and LOOKUPs.
@Suite struct ReaddirPlusAdvisorTests {
    enum Step {
        /// `reader` asks for a page of `directory`; `attributes`: whether it must carry them.
        case list(_ reader: Int32, _ directory: UInt64, attributes: Bool)
        /// `reader` looks up a name in `directory`.
        case lookUp(_ reader: Int32, in: UInt64, isDirectory: Bool)
    }

    /// Plays `steps` on `readers`, expecting each page's answer.
    func play(
        _ steps: [Step], on readers: inout ReaddirPlusReaders, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for (index, step) in steps.enumerated() {
            switch step {
            case .list(let reader, let directory, let expected):
                let answer = readers.attributesWanted(by: reader, listing: directory)
                #expect(answer == expected, "step \(index): \(step)", sourceLocation: sourceLocation)
            case .lookUp(let reader, let directory, let isDirectory):
                readers.lookedUp(by: reader, in: directory, isDirectory: isDirectory)
            }
        }
    }

    @Test func aWalkerThatOnlyDescendsKeepsGettingNamesOnly() {
        var readers = ReaddirPlusReaders()
        // `find` looks up the folders it descends into, nothing else; then the next page.
        play(
            [
                .list(100, 1, attributes: false), .lookUp(100, in: 1, isDirectory: true),
                .list(100, 2, attributes: false), .list(100, 2, attributes: false),
            ], on: &readers)
    }

    @Test func aReaderThatStatsWhatItListsGetsAttributesFromThenOn() {
        var readers = ReaddirPlusReaders()
        // Another reader still starts with names only.
        play(
            [
                .list(7, 10, attributes: false), .lookUp(7, in: 10, isDirectory: false),
                .list(7, 11, attributes: true), .list(7, 10, attributes: true), .list(8, 10, attributes: false),
            ], on: &readers)
    }

    @Test func aLookupOutsideTheNamesOnlyListingsTeachesNothing() {
        var readers = ReaddirPlusReaders()
        // A file opened in a folder the reader never listed, or by a reader that never listed.
        play(
            [
                .list(7, 10, attributes: false), .lookUp(7, in: 99, isDirectory: false),
                .lookUp(8, in: 10, isDirectory: false), .list(7, 11, attributes: false),
                .list(8, 12, attributes: false),
            ], on: &readers)
    }

    @Test func onlyTheRecentNamesOnlyListingsCount() {
        var readers = ReaddirPlusReaders()
        let recent = UInt64(ReaddirPlusReaders.recentDirectories)
        play((0...recent).map { .list(5, $0, attributes: false) }, on: &readers)
        // Folder 0 was listed too long ago; the newest one counts.
        play(
            [
                .lookUp(5, in: 0, isDirectory: false), .list(5, 100, attributes: false),
                .lookUp(5, in: recent, isDirectory: false), .list(5, 101, attributes: true),
            ], on: &readers)
    }

    @Test func theKernelsOwnRequestsAlwaysGetAttributes() {
        var readers = ReaddirPlusReaders()
        play([.list(0, 1, attributes: true)], on: &readers)
        #expect(readers.readers.isEmpty)
    }

    @Test func theTableStaysBoundedAndKeepsTheRecentReaders() {
        var readers = ReaddirPlusReaders()
        play([.list(1, 1, attributes: false), .lookUp(1, in: 1, isDirectory: false)], on: &readers)
        for reader in 2...Int32(ReaddirPlusReaders.capacity * 3) {
            _ = readers.attributesWanted(by: reader, listing: 1)
            // Reader 1 keeps listing now and then: recently seen, never forgotten.
            if reader % 100 == 0 { play([.list(1, 2, attributes: true)], on: &readers) }
        }
        #expect(readers.readers.count <= ReaddirPlusReaders.capacity)
        play([.list(1, 3, attributes: true)], on: &readers)
    }
}
