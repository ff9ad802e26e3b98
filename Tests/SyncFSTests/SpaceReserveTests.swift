import Foundation
import Glibc
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// The state database's room on a full disk (`SpaceReserve`) and the write-failed mark's pure
/// parts (`WriteFailures`, the `write_failures` fact, the content state). The full-disk behaviour
/// on a real mount is `MountTests.FullDiskTest`.
@Suite struct SpaceReserveTests {
    @Test func theReserveIsAPrivateFileOfAllocatedBlocksReleasedOnceAndMadeAgain() throws {
        let temporary = try TemporaryDirectory("syncfs-reserve")
        let directory = temporary.path
        let old = umask(0)
        defer { umask(old) }
        let reserve = SpaceReserve(directory: directory, size: 256 << 10, logger: nil)
        var info = stat()
        #expect(lstat(directory + "/reserve", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600, "private whatever the umask")
        #expect(Int64(info.st_blocks) * 512 >= 256 << 10, "its blocks are allocated, not a hole")
        #expect(reserve.isHeld && reserve.admits(1 << 30), "while held, writes are not checked")
        #expect(reserve.release())
        #expect(!reserve.release(), "released once")
        #expect(access(directory + "/reserve", F_OK) != 0)
        #expect(!reserve.isHeld)
        #expect(reserve.admits(4096), "a roomy disk keeps the reserve's room free after this write")
        reserve.replenish()
        #expect(reserve.isHeld && access(directory + "/reserve", F_OK) == 0, "made again when there is room")
        // A second reserve in the same directory takes the file over.
        #expect(SpaceReserve(directory: directory, size: 256 << 10, logger: nil).isHeld)
    }

    @Test func withoutRoomThereIsNoReserveAndWritesMustLeaveItsRoom() throws {
        let temporary = try TemporaryDirectory("syncfs-reserve")
        let directory = temporary.path
        let reserve = SpaceReserve(directory: directory, size: 1 << 60, logger: nil)
        #expect(!reserve.isHeld)
        #expect(access(directory + "/reserve", F_OK) != 0)
        #expect(!reserve.admits(1), "a write that would take the reserve's room is refused")
        #expect(reserve.diskIsFull)
        #expect(!reserve.release(), "nothing to release")
    }

    @Test func aSymlinkInPlaceOfTheReserveIsNeverFollowed() throws {
        let temporary = try TemporaryDirectory("syncfs-reserve")
        let directory = temporary.path
        let target = directory + "/elsewhere"
        _ = FileManager.default.createFile(atPath: target, contents: Data("keep".utf8))
        #expect(symlink(target, directory + "/reserve") == 0)
        let reserve = SpaceReserve(directory: directory, size: 64 << 10, logger: nil)
        #expect(reserve.isHeld)
        var info = stat()
        #expect(lstat(directory + "/reserve", &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep", "the link's target is untouched")
        reserve.release()
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep")
    }

    @Test func theWriteFailuresFactKeepsEachFileWithItsErrnoAndSkipsWhatItCannotRead() {
        let (one, two) = (FileID.random(), FileID.random())
        let fact = StateFact.writeFailures
        let text = fact.text([one: ENOSPC, two: EIO])
        #expect(fact.decode(text) == [one: ENOSPC, two: EIO])
        #expect(fact.decode("\(one.hex):28,nonsense,\(two.hex):x,:5,\(two.hex):-1") == [one: ENOSPC])
        #expect(fact.text(nil) == "")
    }

    @Test func aWriteFailedFileGetsNoUploadPermitAndShowsError() {
        let state = ContentLifecycle.State(
            downloadRunning: false, isPlaceholder: false, hasLocalChanges: true, writeFailed: true)
        #expect(state == ContentLifecycle.State(.local, .writeFailed))
        #expect(state.uploadPermit == nil)
        #expect(ContentLifecycle.transition(from: state, on: .uploadTaken).actions == [.refuseUpload])
        let visible = VisibleContentState(
            runningDownloadComplete: nil, isPlaceholder: false, hasLocalChanges: true, transfer: nil,
            writeFailed: true)
        #expect(visible.value(outboxError: false, downloadFailed: false, inConflict: false) == .error)
        #expect(WriteFailures.marks(ENOSPC) && WriteFailures.marks(EDQUOT) && WriteFailures.marks(EIO))
        #expect(!WriteFailures.marks(EBADF) && !WriteFailures.marks(EFBIG))
        #expect(WriteFailures.reason(ENOSPC).contains("the disk holding the state directory is full"))
    }
}
