import Foundation
import Glibc
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// The client's side of the trust boundary for entries that are well formed one by one but lie
/// about what they are: kinds that change, setuid modes, symlinks pointing out of the folder,
/// manifests whose chunks are not what they declare.
@Suite("Hostile container: kinds, modes, symlinks, lying content", .serialized)
struct HostileContentTests {
    enum KindChange: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case directoryToFile, directoryToSymlink, fileToDirectory
        var testDescription: String { rawValue }
    }

    /// An existing entry re-sent as another kind is refused; here under open handles on it and on
    /// a file inside it: the handles keep working, nothing outside changes, the feed goes on.
    @Test(arguments: KindChange.allCases)
    func anEntryWhoseKindChangesIsRefusedUnderOpenHandles(_ change: KindChange) async throws {
        let fixture = try HostileFixture()
        let directory = try await fixture.commitGoodDirectory("docs")
        let keepContent = Array("kept\n".utf8)
        let keep = try await fixture.commitGoodFile("keep.txt", keepContent, in: directory)
        let plain = try await fixture.commitGoodFile("plain.txt", Array("plain\n".utf8))
        try await eventually("docs/keep.txt and plain.txt") {
            try fixture.localPaths() == ["docs", "docs/keep.txt", "plain.txt"]
        }
        #expect(try await fixture.read("docs/keep.txt") == keepContent)
        let docsIno = try fixture.folder.lookupIno("docs")
        let keepIno = try fixture.folder.lookupIno("keep.txt", in: docsIno)
        let file = try fixture.folder.fs.open(keepIno, flags: O_RDONLY, caller: testCaller)
        defer { fixture.folder.fs.fileIO.release(file) }
        let listing = try fixture.folder.fs.listings.opendir(docsIno)
        defer { fixture.folder.fs.listings.releasedir(listing) }

        let target: (id: FileID, state: EntryState)
        switch change {
        case .directoryToFile: target = (directory, Hostile.file(Array("docs".utf8), in: .root, mode: 0o6777))
        case .directoryToSymlink:
            target = (directory, Hostile.symlink(Array("docs".utf8), in: .root, to: Array("../sentinel".utf8)))
        case .fileToDirectory: target = (plain, Hostile.directory(Array("plain.txt".utf8), in: .root))
        }
        let served = try await fixture.container.inject(target.id, target.state)
        // A child sent into the would-be directory lands nowhere (the file stays a file).
        if change == .fileToDirectory {
            try await fixture.container.inject(FileID.random(), Hostile.file(Array("victim.txt".utf8), in: target.id))
        }
        try await fixture.expectTheFeedGoesOn()

        fixture.expectRefused(served, "\(change)")
        fixture.expectNothingOutsideChanged()
        #expect(try fixture.folder.fs.getattr(docsIno).kind == .directory)
        #expect(try fixture.folder.fs.getattr(fixture.folder.lookupIno("plain.txt")).kind == .file)
        #expect(try fixture.localPaths() == ["after.txt", "docs", "docs/keep.txt", "plain.txt"])
        #expect(readBytes(file.descriptor, count: 64, at: 0) == keepContent, "the open handle keeps working")
        #expect(try fixture.folder.fs.listings.readdir(listing, offset: 0).map(\.name.description).contains("keep.txt"))
        _ = keep
    }

    /// setuid/setgid bits from a remote are not applied (the mount does not opt in): a hostile
    /// token holder must not make a root-owned setuid program appear on this machine.
    @Test func setuidAndSetgidBitsFromARemoteAreCleared() async throws {
        let fixture = try HostileFixture()
        let chunk = try await fixture.storeChunk(Array("#!/bin/sh\nid\n".utf8))
        let tool = try await fixture.container.inject(
            FileID.random(),
            Hostile.file(Array("tool".utf8), in: .root, mode: 0o6755, size: chunk.length, manifest: [chunk]))
        try await fixture.container.inject(
            FileID.random(), Hostile.directory(Array("shared".utf8), in: .root, mode: 0o2775))
        let plain = try await fixture.commitGoodFile("plain", Array("x".utf8))
        try await eventually("tool, shared, plain") {
            try fixture.folder.childNames() == ["plain", "shared", "tool"]
        }
        // A later version turns setuid on for a file that had none.
        var state = Hostile.file(Array("plain".utf8), in: .root, mode: 0o4755, size: 1)
        state.manifest = try await [fixture.storeChunk(Array("x".utf8))]
        let setuidLater = try await fixture.container.inject(plain, state)
        try await fixture.expectTheFeedGoesOn()
        let modes = try ["tool", "shared", "plain"].map {
            try fixture.folder.fs.getattr(fixture.folder.lookupIno($0)).mode
        }
        #expect(modes == [0o755, 0o775, 0o755], "setuid/setgid cleared: \(modes.map { String($0, radix: 8) })")
        #expect(try await fixture.read("tool") == Array("#!/bin/sh\nid\n".utf8))
        #expect(fixture.isLocal(tool.id) && fixture.isLocal(setuidLater.id))
        fixture.expectNothingOutsideChanged()
    }

    /// Symlinks are data: one pointing out of the folder (relative or absolute, at the sentinel)
    /// is created as a symlink with that target, and nothing sent "through" it reaches outside.
    @Test func aSymlinkPointingOutIsKeptAsDataAndNeverFollowed() async throws {
        let fixture = try HostileFixture()
        let relative = Array("../sentinel".utf8)
        let absolute = Array((fixture.sentinel + "/victim.txt").utf8)
        let out = try await fixture.container.inject(
            FileID.random(), Hostile.symlink(Array("out".utf8), in: .root, to: relative))
        let abs = try await fixture.container.inject(
            FileID.random(), Hostile.symlink(Array("abs".utf8), in: .root, to: absolute))
        try await eventually("out and abs") { try fixture.folder.childNames() == ["abs", "out"] }
        // Content, a mode and a child sent "through" the links.
        let chunk = try await fixture.storeChunk(Hostile.pwned)
        try await fixture.container.inject(
            FileID.random(),
            Hostile.file(Array("victim.txt".utf8), in: out.id, mode: 0o6777, size: chunk.length, manifest: [chunk]))
        var absChanged = abs.state
        absChanged.mode = 0o700
        absChanged.mtime = 2
        try await fixture.container.inject(abs.id, absChanged)
        var outRenamed = out.state
        outRenamed.name = Array("out2".utf8)
        try await fixture.container.inject(out.id, outRenamed)
        try await fixture.expectTheFeedGoesOn()

        fixture.expectNothingOutsideChanged()
        #expect(try fixture.folder.childNames() == ["abs", "after.txt", "out2"])
        #expect(try fixture.folder.fs.readlink(fixture.folder.lookupIno("out2")) == relative)
        #expect(try fixture.folder.fs.readlink(fixture.folder.lookupIno("abs")) == absolute)
        #expect(try fixture.folder.fs.getattr(fixture.folder.lookupIno("abs")).kind == .symlink)
    }

    enum LyingChunk: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// The manifest declares 100 bytes; the chunk (honest about itself) holds 50.
        case shorterThanDeclared
        /// The manifest declares 10 bytes; the chunk holds 50.
        case longerThanDeclared
        /// The container answers another chunk's bytes under the declared hash.
        case otherBytesUnderTheHash
        /// The container answers a chunk whose plain length field lies.
        case plainLengthLies
        var testDescription: String { rawValue }
    }

    /// A manifest whose sizes lie (its size agrees with its lengths, so the entry itself is well
    /// formed): a read fails with an error, never returns wrong bytes, and the feed goes on.
    @Test(arguments: LyingChunk.allCases)
    func aReadOfContentThatIsNotWhatTheManifestSaysFailsWithAnError(_ lie: LyingChunk) async throws {
        let fixture = try HostileFixture()
        let real = [UInt8](repeating: 0x41, count: 50)
        let ref: ChunkRef
        switch lie {
        case .shorterThanDeclared: ref = try await fixture.storeChunk(real, declaring: 100)
        case .longerThanDeclared: ref = try await fixture.storeChunk(real, declaring: 10)
        case .otherBytesUnderTheHash:
            let declared = [UInt8](repeating: 0x42, count: 50)
            ref = ChunkRef(hash: declared.withUnsafeBytes { ChunkCodec.hash($0) }, length: 50)
            var answer = real.withUnsafeBytes { ChunkCodec.encode($0, level: 0) }
            answer.hash = ref.hash
            fixture.container.answerChunk(ref.hash, with: answer)
        case .plainLengthLies:
            ref = try await fixture.storeChunk(real)
            var answer = EncodedChunk(hash: ref.hash, encoding: .raw, plainLength: 50, payload: real)
            answer.plainLength = 1 << 40
            fixture.container.answerChunk(ref.hash, with: answer)
        }
        let served = try await fixture.container.inject(
            FileID.random(), Hostile.file(Array("lying.bin".utf8), in: .root, size: ref.length, manifest: [ref]))
        try await fixture.expectTheFeedGoesOn()
        let ino = try fixture.folder.lookupIno("lying.bin")
        let handle = try fixture.folder.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        defer { fixture.folder.fs.fileIO.release(handle) }
        let size = Int(try fixture.folder.fs.getattr(ino).size)
        let outcome = try await fixture.offThePool { [fs = Unchecked(fixture.folder.fs), handle = Unchecked(handle)] in
            Result { () throws(FSError) in try fs.value.residency.ensureContent(handle.value, offset: 0, count: size) }
        }
        switch outcome {
        case .success:
            Issue.record(
                "the read of lying content succeeded: \(readBytes(handle.descriptor, count: size, at: 0).prefix(16))")
        case .failure(let error):
            #expect([EIO, EREMOTEIO].contains(error.errno), "the read fails with EIO or EREMOTEIO, not \(error)")
        }
        #expect(fixture.isLocal(served.id))
        fixture.expectNothingOutsideChanged()
    }
}
