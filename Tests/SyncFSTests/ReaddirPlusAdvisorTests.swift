import Testing

@testable import SyncFS

/// `ReaddirPlusReaders`: names only until a reader stats what it lists (issue #18).
@Suite struct ReaddirPlusAdvisorTests {
    @Test func aWalkerThatOnlyDescendsKeepsGettingNamesOnly() {
        var readers = ReaddirPlusReaders()
        let answer1 = readers.attributesWanted(by: 100, listing: 1)
        #expect(!answer1)
        // `find` looks up the folders it descends into, nothing else.
        readers.lookedUp(by: 100, in: 1, isDirectory: true)
        let answer2 = readers.attributesWanted(by: 100, listing: 2)
        #expect(!answer2)
        let answer3 = readers.attributesWanted(by: 100, listing: 2)
        #expect(!answer3, "the next page of the same folder")
    }

    @Test func aReaderThatStatsWhatItListsGetsAttributesFromThenOn() {
        var readers = ReaddirPlusReaders()
        let answer4 = readers.attributesWanted(by: 7, listing: 10)
        #expect(!answer4)
        readers.lookedUp(by: 7, in: 10, isDirectory: false)
        let answer5 = readers.attributesWanted(by: 7, listing: 11)
        #expect(answer5)
        let answer6 = readers.attributesWanted(by: 7, listing: 10)
        #expect(answer6)
        // Another reader still starts with names only.
        let answer7 = readers.attributesWanted(by: 8, listing: 10)
        #expect(!answer7)
    }

    @Test func aLookupOutsideTheNamesOnlyListingsTeachesNothing() {
        var readers = ReaddirPlusReaders()
        let answer8 = readers.attributesWanted(by: 7, listing: 10)
        #expect(!answer8)
        // A file opened elsewhere (a path the reader knew), or by a reader that never listed.
        readers.lookedUp(by: 7, in: 99, isDirectory: false)
        readers.lookedUp(by: 8, in: 10, isDirectory: false)
        let answer9 = readers.attributesWanted(by: 7, listing: 11)
        #expect(!answer9)
        let answer10 = readers.attributesWanted(by: 8, listing: 12)
        #expect(!answer10)
    }

    @Test func onlyTheRecentNamesOnlyListingsCount() {
        var readers = ReaddirPlusReaders()
        for directory in 0..<UInt64(ReaddirPlusReaders.recentDirectories + 1) {
            let answer11 = readers.attributesWanted(by: 5, listing: directory)
            #expect(!answer11)
        }
        readers.lookedUp(by: 5, in: 0, isDirectory: false)
        let answer12 = readers.attributesWanted(by: 5, listing: 100)
        #expect(!answer12, "directory 0 was listed too long ago")
        readers.lookedUp(by: 5, in: UInt64(ReaddirPlusReaders.recentDirectories), isDirectory: false)
        let answer13 = readers.attributesWanted(by: 5, listing: 101)
        #expect(answer13)
    }

    @Test func theKernelsOwnRequestsAlwaysGetAttributes() {
        var readers = ReaddirPlusReaders()
        let answer14 = readers.attributesWanted(by: 0, listing: 1)
        #expect(answer14)
        #expect(readers.readers.isEmpty)
    }

    @Test func theTableStaysBoundedAndKeepsTheRecentReaders() {
        var readers = ReaddirPlusReaders()
        let answer15 = readers.attributesWanted(by: 1, listing: 1)
        #expect(!answer15)
        readers.lookedUp(by: 1, in: 1, isDirectory: false)
        for reader in 2...Int32(ReaddirPlusReaders.capacity * 3) {
            _ = readers.attributesWanted(by: reader, listing: 1)
            // Reader 1 keeps listing now and then: recently seen, never forgotten.
            if reader % 100 == 0 {
                let recentOne = readers.attributesWanted(by: 1, listing: 2)
                #expect(recentOne)
            }
        }
        #expect(readers.readers.count <= ReaddirPlusReaders.capacity)
        let answer17 = readers.attributesWanted(by: 1, listing: 3)
        #expect(answer17, "a recent reader is remembered")
    }
}
