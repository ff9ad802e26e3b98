import SyncBackend
import Testing

@testable import SyncFS

@Suite("EstablishedVersions: what the mass-delete guard counts (manual clock)")
struct EstablishedVersionsTests {
    /// A version this run saw arrive is fresh for 600 units (buckets of 10).
    let age: Int64 = 600

    @Test func whatTheContainerHadAtTheStartIsEstablishedAtOnce() {
        var versions = EstablishedVersions(age: age)
        // Catching up after a restart: what was committed while the mount was away.
        versions.arrived(500, now: 0)
        versions.arrived(501, now: 1)
        versions.feedCaughtUp()
        #expect(versions.isEstablished(40, now: 2), "from before the start")
        #expect(versions.isEstablished(501, now: 2), "read while catching up")
        // Nothing arrived since: still everything is established.
        #expect(versions.isEstablished(501, now: 3))
    }

    @Test func whatArrivesLaterIsFreshForTheAge() {
        var versions = EstablishedVersions(age: age)
        versions.arrived(500, now: 0)
        versions.feedCaughtUp()
        versions.arrived(510, now: 100)  // another machine's git clone
        versions.committed(520, now: 200)  // this mount's build output
        #expect(versions.isEstablished(500, now: 201))
        #expect(!versions.isEstablished(510, now: 201))
        #expect(!versions.isEstablished(520, now: 201))
        #expect(!versions.isEstablished(510, now: 699), "known for less than the age")
        #expect(versions.isEstablished(510, now: 700), "known for the age")
        #expect(!versions.isEstablished(520, now: 790))
        #expect(versions.isEstablished(520, now: 800))
    }

    @Test func ownCommitsAreFreshEvenBeforeTheFirstCatchUp() {
        var versions = EstablishedVersions(age: age)
        versions.committed(900, now: 0)
        versions.arrived(899, now: 1)
        versions.arrived(901, now: 1)
        #expect(versions.isEstablished(899, now: 2), "committed before this run's first commit")
        #expect(!versions.isEstablished(900, now: 2))
        #expect(!versions.isEstablished(901, now: 2), "came after this run's own commit")
    }

    @Test func anArrivalCountsFromItsBucketAtTheEarliest() {
        var versions = EstablishedVersions(age: age)
        versions.feedCaughtUp()
        versions.arrived(10, now: 0)
        versions.arrived(11, now: 9)  // same bucket as 10: counts as known from 0
        versions.arrived(12, now: 10)
        #expect(versions.isEstablished(11, now: 600))
        #expect(!versions.isEstablished(12, now: 609))
        #expect(versions.isEstablished(12, now: 610))
    }

    @Test func ageZeroEstablishesEverything() {
        var versions = EstablishedVersions(age: 0)
        versions.feedCaughtUp()
        versions.committed(5, now: 0)
        #expect(versions.isEstablished(5, now: 0))
    }
}
