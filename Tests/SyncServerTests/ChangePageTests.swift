import Foundation
import SyncBackend
import TestSupport
import Testing

@testable import SyncServer

/// `changes` pages are bounded in bytes: a page whose JSON would pass the bound is asked for
/// again with fewer entries (the cursor stays the container's), one entry is always sent, and
/// walking the pages still gives every change once, in order.
@Suite struct ChangePageTests {
    /// A container with `count` files whose manifests list one chunk `refs` times (JSON of about
    /// 100 bytes per reference).
    static func container(files count: Int, refs: Int, in directory: TemporaryDirectory) async throws -> (
        LocalContainer, [FileID]
    ) {
        let container = try LocalContainer.openOrCreate(at: directory.path + "/box")
        let chunk = Sample.chunk(Sample.bytes(100))
        var ids: [FileID] = []
        try await onDisk { () async throws(ContainerProtocolError) in
            try await container.putChunk(chunk)
            for index in 0..<count {
                var state = Sample.file("big\(index)", chunks: Array(repeating: chunk, count: refs))
                state.mtime = Int64(index)
                let request = Sample.create(state)
                guard case .committed = try await container.commit(request) else {
                    throw .invalidRequest("commit \(index) was refused")
                }
                ids.append(request.id)
            }
        }
        return (container, ids)
    }

    /// Every page from the beginning, fetched with `limit` and `maxBytes`.
    static func walk(_ container: LocalContainer, limit: Int, maxBytes: Int) async throws -> [(ChangeBatch, Data)] {
        var pages: [(ChangeBatch, Data)] = []
        var cursor = FeedCursor.beginning
        while true {
            let page = try await onDisk { () async throws(ContainerProtocolError) in
                try await ChangePage.fetch(from: container, after: cursor, limit: limit, maxBytes: maxBytes)
            }
            #expect(page.form == .json)
            pages.append((page.batch, page.body))
            cursor = page.batch.cursor
            if !page.batch.moreComing { return pages }
        }
    }

    @Test func pagesOverTheByteBoundHoldFewerEntries() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (container, ids) = try await Self.container(files: 12, refs: 2000, in: directory)
        let one = try JSONEncoder().encode(
            try await onDisk { () async throws(ContainerProtocolError) in try await container.entry(ids[0]) })
        #expect(one.count > 150_000)
        // Three entries fit in the bound, four do not.
        let maxBytes = one.count * 3 + one.count / 2
        let pages = try await Self.walk(container, limit: 10, maxBytes: maxBytes)
        for (batch, json) in pages {
            #expect(json.count <= maxBytes)
            #expect(try JSONDecoder().decode(ChangeBatch.self, from: json) == batch)
        }
        #expect(pages.map { $0.0.entries.count } == [3, 3, 3, 3])
        #expect(pages.map { $0.0.moreComing } == [true, true, true, false])
        #expect(pages.flatMap { $0.0.entries.map(\.id) } == ids)
        // Without the bound (the protocol's 16 MiB), one page holds them all.
        let whole = try await Self.walk(container, limit: 100, maxBytes: WireProtocol.maxChangePageBytes)
        #expect(whole.count == 1)
        #expect(whole.first?.0.entries.map(\.id) == ids)
    }

    @Test func aSingleEntryIsSentHoweverLarge() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (container, ids) = try await Self.container(files: 3, refs: 2000, in: directory)
        let pages = try await Self.walk(container, limit: 1000, maxBytes: 10_000)
        #expect(pages.map { $0.0.entries.count } == [1, 1, 1])
        #expect(pages.map { $0.1.count > 10_000 } == [true, true, true])
        #expect(pages.flatMap { $0.0.entries.map(\.id) } == ids)
    }

    @Test func theNextLimitIsWhatFittedAndAlwaysSmaller() {
        #expect(ChangePage.nextLimit(after: 1000, returned: 1000, fitting: 600) == 600)
        #expect(ChangePage.nextLimit(after: 10_000, returned: 40, fitting: 7) == 7)
        #expect(ChangePage.nextLimit(after: 1000, returned: 1000, fitting: 0) == 1)
        #expect(ChangePage.nextLimit(after: 2, returned: 2, fitting: 5) == 1)
        for limit in 2...50 {
            for fitting in 0..<limit {
                let next = ChangePage.nextLimit(after: limit, returned: limit, fitting: fitting)
                #expect(next >= 1 && next < limit)
            }
        }
    }

    /// The estimate that spares small pages a second encoding is an upper bound.
    @Test func theSizeEstimateIsAnUpperBound() throws {
        let chunk = Sample.chunk(Sample.bytes(100))
        var state = Sample.file("naïve \"name\"/\n", chunks: Array(repeating: chunk, count: 50))
        state.xattrs = ["user.a/b\"c": [UInt8](repeating: 255, count: 1000), "user.x": []]
        state.mtime = Int64.min
        state.size = Int64.max
        var symlink = Sample.file("link")
        symlink.kind = .symlink
        symlink.symlinkTarget = Array(repeating: 200, count: 300)
        symlink.manifest = []
        for entryState in [state, symlink, Sample.directory("d")] {
            let entry = RemoteEntry(
                id: .random(), version: .max, isDeleted: false, device: "dev/\u{7f}\"é\\", state: entryState)
            let batch = ChangeBatch(
                entries: [entry, entry], cursor: FeedCursor(token: "18446744073709551615"), moreComing: true)
            #expect(ChangePage.estimatedBytes(of: entry) >= (try JSONEncoder().encode(entry)).count)
            #expect(ChangePage.estimatedBytes(of: batch) >= (try JSONEncoder().encode(batch)).count)
        }
    }
}
