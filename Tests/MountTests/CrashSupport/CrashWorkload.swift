import Foundation
import Glibc
import TestSupport
import Testing

/// Writer threads for one cycle.
final class CrashWorkload: @unchecked Sendable {
    enum Mode { case mixed, fsyncStorm, renameStorm }
    let state: CrashState
    let cycle: Int
    let mode: Mode
    private let done = DispatchGroup()
    private let lock = NSLock()
    private var stop = false

    init(state: CrashState, cycle: Int, mode: Mode) {
        self.state = state
        self.cycle = cycle
        self.mode = mode
    }

    func start() {
        for t in 0..<state.threads {
            done.enter()
            let thread = Thread { [self] in
                self.run(thread: t)
                self.done.leave()
            }
            thread.start()
        }
    }

    func stopAndJoin(timeout: Double) -> Bool {
        lock.lock()
        stop = true
        lock.unlock()
        return done.wait(timeout: .now() + timeout) == .success
    }

    private func shouldStop() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return stop
    }

    private func run(thread t: Int) {
        var rng = SeededGenerator(seed: state.seed &+ UInt64(cycle * 100 + t + 1) &* 0x9E37_79B9)
        let files = state.filesOf(thread: t)
        while !shouldStop() {
            let rel = rng.pick(files)
            let ok: Bool
            switch mode {
            case .mixed:
                ok =
                    rng.weighted([50, 15, 10, 10, 8]) == 0
                    ? pageWrite(rel, &rng, fsyncChance: 0.5)
                    : rng.chance(0.5)
                        ? append(rel, &rng, fsyncChance: 0.5)
                        : rng.chance(0.5)
                            ? truncate(rel, &rng, fsyncChance: 0.5)
                            : rng.chance(0.7) ? save(rel, &rng) : deleteOrCreate(rel, &rng)
            case .fsyncStorm:
                ok = rng.chance(0.8) ? pageWrite(rel, &rng, fsyncChance: 1) : append(rel, &rng, fsyncChance: 1)
            case .renameStorm:
                ok = rng.chance(0.7) ? save(rel, &rng) : deleteOrCreate(rel, &rng)
            }
            if !ok { return }
        }
    }

    /// One write inside one page (so each write reaches the daemon whole), fsync'd with some probability.
    private func pageWrite(_ rel: String, _ rng: inout SeededGenerator, fsyncChance: Double) -> Bool {
        guard var content = state.current(rel) else { return deleteOrCreate(rel, &rng) }
        let page = rng.below(CrashState.maxPages)
        let inPage = rng.below(CrashState.page)
        let len = rng.int(1...(CrashState.page - inPage))
        let offset = page * CrashState.page + inPage
        let bytes = rng.bytes(len)
        if content.count < offset + len { content += [UInt8](repeating: 0, count: offset + len - content.count) }
        content.replaceSubrange(offset..<(offset + len), with: bytes)
        state.intend(rel, content, "pwrite \(len)B at \(offset)")
        let fd = open(state.path(rel), O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else {
            state.error("open \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        defer { close(fd) }
        guard case .success = ModelSys.writeAll(fd: fd, bytes, offset: offset) else {
            state.error("pwrite \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        return !rng.chance(fsyncChance) || state.fsyncAndAcknowledge(fd, rel, what: "file")
    }

    private func append(_ rel: String, _ rng: inout SeededGenerator, fsyncChance: Double) -> Bool {
        guard var content = state.current(rel) else { return deleteOrCreate(rel, &rng) }
        if content.count >= CrashState.page * CrashState.maxPages {
            return truncate(rel, &rng, fsyncChance: fsyncChance)
        }
        let room = CrashState.page - content.count % CrashState.page
        let bytes = rng.bytes(rng.int(1...room))
        content += bytes
        state.intend(rel, content, "append \(bytes.count)B")
        let fd = open(state.path(rel), O_WRONLY | O_APPEND | O_CLOEXEC)
        guard fd >= 0 else {
            state.error("open \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        defer { close(fd) }
        guard case .success = ModelSys.writeAll(fd: fd, bytes) else {
            state.error("append \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        return !rng.chance(fsyncChance) || state.fsyncAndAcknowledge(fd, rel, what: "file")
    }

    private func truncate(_ rel: String, _ rng: inout SeededGenerator, fsyncChance: Double) -> Bool {
        guard var content = state.current(rel) else { return deleteOrCreate(rel, &rng) }
        let size = rng.int(0...(CrashState.page * CrashState.maxPages))
        if size < content.count {
            content.removeSubrange(size...)
        } else {
            content += [UInt8](repeating: 0, count: size - content.count)
        }
        state.intend(rel, content, "ftruncate \(size)")
        let fd = open(state.path(rel), O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else {
            state.error("open \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        defer { close(fd) }
        guard ftruncate(fd, off_t(size)) == 0 else {
            state.error("ftruncate \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        return !rng.chance(fsyncChance) || state.fsyncAndAcknowledge(fd, rel, what: "file")
    }

    /// Save-by-rename as editors do it: write a temporary file, fsync it, rename it over, fsync the directory.
    private func save(_ rel: String, _ rng: inout SeededGenerator) -> Bool {
        let content = rng.bytes(rng.int(0...(CrashState.page * CrashState.maxPages)))
        let tmp = rel + ".tmp\(cycle)"
        let fd = open(state.path(tmp), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            state.error("create \(tmp): \(ModelSys.errnoName(errno))")
            return false
        }
        guard case .success = ModelSys.writeAll(fd: fd, content) else {
            state.error("write \(tmp): \(ModelSys.errnoName(errno))")
            close(fd)
            return false
        }
        guard state.fsyncAndAcknowledge(fd, nil, what: "temporary file") else {
            close(fd)
            return false
        }
        close(fd)
        state.intend(rel, content, "rename \(tmp) over it")
        guard rename(state.path(tmp), state.path(rel)) == 0 else {
            state.error("rename \(tmp) -> \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        return state.fsyncDir(ModelSys.parent(rel), covering: rel)
    }

    /// Deletes an existing file or creates a missing one; either way the directory is fsync'd.
    private func deleteOrCreate(_ rel: String, _ rng: inout SeededGenerator) -> Bool {
        if state.current(rel) != nil {
            state.intend(rel, nil, "unlink")
            guard unlink(state.path(rel)) == 0 else {
                state.error("unlink \(rel): \(ModelSys.errnoName(errno))")
                return false
            }
        } else {
            let content = rng.bytes(rng.int(0...(CrashState.page * 4)))
            // `open(O_CREAT)` makes an empty file before the write fills it: a kill between the two
            // (or before the written pages reached the daemon) may leave it empty.
            state.intend(rel, [], "create")
            state.intend(rel, content, "write \(content.count)B")
            let fd = open(state.path(rel), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                state.error("create \(rel): \(ModelSys.errnoName(errno))")
                return false
            }
            defer { close(fd) }
            guard case .success = ModelSys.writeAll(fd: fd, content) else {
                state.error("write \(rel): \(ModelSys.errnoName(errno))")
                return false
            }
            // Content is durable now, the name only once the directory is fsync'd.
            guard state.fsyncAndAcknowledge(fd, nil, what: "new file") else { return false }
        }
        return state.fsyncDir(ModelSys.parent(rel), covering: rel)
    }
}
