import CFuse
import Foundation
import Glibc

// Trampolines for file content. The read and write paths take no lock: the handle in `fi->fh`
// carries the cache file descriptor.

func fuseCreate(
    _ req: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ mode: mode_t,
    _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    let context = FuseContext.of(req)
    // `O_TRUNC` of an existing file: see `fuseOpen`.
    AfterReply.handling {
        do throws(FSError) {
            let (entry, handle) = try context.fileSystem.opener.create(
                parent: inode(parent), name: fileName(name), mode: UInt32(mode), flags: info?.pointee.flags ?? 0,
                caller: caller(req))
            storeHandle(handle, in: info)
            info?.pointee.keep_cache = 1
            var parameters = makeEntryParameters(entry, context)
            if fuse_reply_create(req, &parameters, info) != 0 {
                // The kernel did not take the handle (the caller was interrupted): undo the open.
                if let handle = takeHandle(info, as: OpenFile.self) { context.fileSystem.fileIO.release(handle) }
                context.fileSystem.forget(entry.attributes.ino, count: 1)
            }
        } catch {
            replyError(req, error)
        }
    }
}

func fuseOpen(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.of(req)
    // An `O_TRUNC` answers the reads it cut short after its own answer, which gives the kernel
    // the new size (`AfterReply`).
    AfterReply.handling {
        do throws(FSError) {
            let handle = try context.fileSystem.open(inode(ino), flags: info?.pointee.flags ?? 0, caller: caller(req))
            storeHandle(handle, in: info)
            // The folder is the only writer in this mount's page cache; remote changes invalidate it.
            info?.pointee.keep_cache = 1
            if fuse_reply_open(req, info) != 0, let handle = takeHandle(info, as: OpenFile.self) {
                context.fileSystem.fileIO.release(handle)
            }
        } catch {
            replyError(req, error)
        }
    }
}

func fuseRead(
    _ req: fuse_req_t?, _ ino: fuse_ino_t, _ size: Int, _ offset: off_t, _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    guard let req, let handle = peekHandle(info, as: OpenFile.self) else { return replyError(req, .badHandle) }
    let context = FuseContext.of(req)
    let wait: ChunkWait?
    do {
        wait = try context.fileSystem.reads.prepareRead(
            handle, offset: Int64(offset), count: size, processName: { processName(req) })
    } catch {
        return replyError(req, error)
    }
    // Bytes still downloading: answered when they are there (no worker thread waits for them).
    if let wait {
        return PendingRead.start(req, handle: handle, size: size, offset: offset, wait: wait, in: context.pendingReads)
    }
    replyFromCacheFile(req, handle, size: size, offset: offset)
}

func fuseWrite(
    _ req: fuse_req_t?, _ ino: fuse_ino_t, _ bytes: UnsafePointer<CChar>?, _ size: Int, _ offset: off_t,
    _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    guard let handle = peekHandle(info, as: OpenFile.self), let bytes else { return replyError(req, .badHandle) }
    do {
        let written = try FuseContext.of(req).fileSystem.fileIO.write(
            handle, UnsafeRawPointer(bytes), count: size, offset: Int64(offset),
            fromPageCache: info?.pointee.writepage != 0, caller: { caller(req) })
        fuse_reply_write(req, written)
    } catch {
        replyError(req, error)
    }
}

/// The write path with splice: libfuse may hand the data as a pipe (FUSE_CAP_SPLICE_READ);
/// `fuse_buf_copy` moves it into the cache file without a copy through user space.
func fuseWriteBuf(
    _ req: fuse_req_t?, _ ino: fuse_ino_t, _ source: UnsafeMutablePointer<fuse_bufvec>?, _ offset: off_t,
    _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    guard let handle = peekHandle(info, as: OpenFile.self), let source else { return replyError(req, .badHandle) }
    // Moves the kernel's pipe (or buffer) into the cache file's descriptor: all its bytes, or
    // -errno. `fuse_buf_copy` answers a short count when the disk fills part way (and advances
    // the source): asked again for the rest, it gives the errno. A short answer to the kernel's
    // write-back would drop the rest of its pages without an error.
    let size = fuse_buf_size(source)
    let splice = { (descriptor: Int32) -> Int in
        var done = 0
        while done < size {
            var destination = fuse_bufvec()
            destination.count = 1
            destination.buf.size = size - done
            destination.buf.flags = fuse_buf_flags(rawValue: FUSE_BUF_IS_FD.rawValue | FUSE_BUF_FD_SEEK.rawValue)
            destination.buf.fd = descriptor
            destination.buf.pos = offset + off_t(done)
            let copied = fuse_buf_copy(&destination, source, fuse_buf_copy_flags(rawValue: 0))
            if copied < 0 { return copied }
            if copied == 0 { return -Int(EIO) }
            done += copied
        }
        return done
    }
    do {
        let written = try FuseContext.of(req).fileSystem.fileIO.write(
            handle, offset: Int64(offset), count: size, fromPageCache: info?.pointee.writepage != 0,
            caller: { caller(req) }, copy: splice)
        fuse_reply_write(req, written)
    } catch {
        replyError(req, error)
    }
}

func fuseRelease(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.of(req)
    if let handle = takeHandle(info, as: OpenFile.self) { context.fileSystem.fileIO.release(handle) }
    // The open file held a flock: it ends with its last close.
    if let info, info.pointee.flock_release != 0 { releaseFlock(ino, owner: info.pointee.lock_owner, context) }
    fuse_reply_err(req, 0)
}

func fuseFsync(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ dataOnly: Int32, _ info: UnsafeMutablePointer<fuse_file_info>?)
{
    guard let handle = peekHandle(info, as: OpenFile.self) else { return replyError(req, .badHandle) }
    do {
        try FuseContext.of(req).fileSystem.fileIO.fsync(handle, dataOnly: dataOnly != 0)
        fuse_reply_err(req, 0)
    } catch {
        replyError(req, error)
    }
}

func fuseFallocate(
    _ req: fuse_req_t?, _ ino: fuse_ino_t, _ mode: Int32, _ offset: off_t, _ length: off_t,
    _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    guard let handle = peekHandle(info, as: OpenFile.self) else { return replyError(req, .badHandle) }
    do {
        try FuseContext.of(req).fileSystem.fileIO.fallocate(
            handle, mode: mode, offset: Int64(offset), length: Int64(length))
        fuse_reply_err(req, 0)
    } catch {
        replyError(req, error)
    }
}

func fuseLseek(
    _ req: fuse_req_t?, _ ino: fuse_ino_t, _ offset: off_t, _ whence: Int32,
    _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    guard let handle = peekHandle(info, as: OpenFile.self) else { return replyError(req, .badHandle) }
    do {
        let result = try FuseContext.of(req).fileSystem.fileIO.lseek(handle, offset: Int64(offset), whence: whence)
        fuse_reply_lseek(req, off_t(result))
    } catch {
        replyError(req, error)
    }
}

/// The name (`/proc/PID/comm`) of the process that made the request, if it can be read.
private func processName(_ req: fuse_req_t?) -> String? {
    guard let context = fuse_req_ctx(req) else { return nil }
    let fd = open("/proc/\(context.pointee.pid)/comm", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 64)
    let count = read(fd, &buffer, buffer.count)
    guard count > 0 else { return nil }
    return String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .newlines)
}
