import CFuse
import CoreMetrics
import Glibc
import Synchronization

/// The kernel's operations as `syncfs_mount_fuse_operations_total` and
/// `syncfs_mount_fuse_operation_duration_seconds` count them (doc/METRICS.md), by `operation`.
enum FuseOperationKind: Int, CaseIterable, Sendable {
    case lookup, forget, getattr, setattr, readlink, mknod, mkdir, unlink, rmdir, symlink, rename, link, open, read
    case write, flush, release, fsync, opendir, readdir, readdirplus, releasedir, fsyncdir, statfs, setxattr
    case getxattr, listxattr, removexattr, create, getlk, setlk, flock, fallocate, lseek

    /// The label value: libfuse's name of the operation (`write_buf` counts as `write`,
    /// `forget_multi` as `forget`).
    var label: String { String(describing: self) }
}

/// Counts every operation the kernel sends and times a sample of them, cheaply enough for the
/// read and write paths: a count is one relaxed atomic add; one operation in `sampleEvery` of
/// each kind (the first included) is timed with two reads of the monotonic clock and recorded
/// in its histogram (a short lock). The counts reach the registry when it is scraped
/// (`publishCounts`). Only a mount with `--metrics-listen` has one: without, the operation
/// table is not wrapped at all (`FuseSession`).
///
/// The time is the worker's time in the operation, from the trampoline's start to its return:
/// a read answered later, when its bytes are downloaded (`PendingRead`), is timed up to its
/// hand-over, not its answer.
final class FuseOperationTiming: Sendable {
    /// One kind's atomic count, what of it the registry has, and its histogram.
    final class Series: Sendable {
        let count = Atomic<UInt64>(0)
        let published = Mutex<UInt64>(0)
        let counter: Counter
        let timer: Timer

        init(_ kind: FuseOperationKind) {
            counter = Counter(label: "syncfs_mount_fuse_operations_total", dimensions: [("operation", kind.label)])
            timer = Timer(label: FuseOperationTiming.durationLabel, dimensions: [("operation", kind.label)])
        }
    }

    static let durationLabel = "syncfs_mount_fuse_operation_duration_seconds"
    /// From 10 µs to 2.5 s: most operations answer from memory in microseconds.
    static let buckets: [Duration] = [
        .microseconds(10), .microseconds(25), .microseconds(50), .microseconds(100), .microseconds(250),
        .microseconds(500), .milliseconds(1), .milliseconds(5), .milliseconds(25), .milliseconds(100),
        .milliseconds(500), .milliseconds(2500),
    ]

    let sampleEvery: UInt64
    private let series: [Series]
    /// The table as it was before `wrap` (set once, before the session starts; read-only after).
    nonisolated(unsafe) private(set) var original = fuse_lowlevel_ops()

    init(sampleEvery: UInt64 = 8) {
        self.sampleEvery = max(1, sampleEvery)
        series = FuseOperationKind.allCases.map(Series.init)
    }

    /// Runs `body` (one trampoline), counting it and timing it if it is in the sample.
    @inline(__always)
    func time(_ kind: FuseOperationKind, _ body: () -> Void) {
        let series = series[kind.rawValue]
        let number = series.count.wrappingAdd(1, ordering: .relaxed).newValue
        guard number % sampleEvery == 1 || sampleEvery == 1 else { return body() }
        let start = Self.monotonicNanoseconds()
        body()
        series.timer.recordNanoseconds(Self.monotonicNanoseconds() - start)
    }

    /// Adds the operations counted since the last call to the registry's counters.
    func publishCounts() {
        for series in series {
            let now = series.count.load(ordering: .relaxed)
            let delta = series.published.withLock { published in
                defer { published = now }
                return now &- published
            }
            if delta > 0 { series.counter.increment(by: Int64(truncatingIfNeeded: delta)) }
        }
    }

    @inline(__always)
    private static func monotonicNanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// The timing of the context of `req` (only a wrapped table's trampolines call this).
    @inline(__always)
    static func of(_ req: fuse_req_t?) -> FuseOperationTiming { FuseContext.of(req).timing! }

    /// Keeps `operations` as the original and replaces each operation it has with one that
    /// times the original (through the session's context, since a C function pointer captures
    /// nothing). Called once, before the session is created.
    func wrap(_ operations: inout fuse_lowlevel_ops) {
        original = operations
        let o = operations
        typealias T = FuseOperationTiming
        if o.lookup != nil {
            operations.lookup = { r, a, b in T.of(r).time(.lookup) { T.of(r).original.lookup!(r, a, b) } }
        }
        if o.forget != nil {
            operations.forget = { r, a, b in T.of(r).time(.forget) { T.of(r).original.forget!(r, a, b) } }
        }
        if o.forget_multi != nil {
            operations.forget_multi = { r, a, b in
                T.of(r).time(.forget) { T.of(r).original.forget_multi!(r, a, b) }
            }
        }
        if o.getattr != nil {
            operations.getattr = { r, a, b in T.of(r).time(.getattr) { T.of(r).original.getattr!(r, a, b) } }
        }
        if o.setattr != nil {
            operations.setattr = { r, a, b, c, d in
                T.of(r).time(.setattr) { T.of(r).original.setattr!(r, a, b, c, d) }
            }
        }
        if o.readlink != nil {
            operations.readlink = { r, a in T.of(r).time(.readlink) { T.of(r).original.readlink!(r, a) } }
        }
        if o.mknod != nil {
            operations.mknod = { r, a, b, c, d in T.of(r).time(.mknod) { T.of(r).original.mknod!(r, a, b, c, d) } }
        }
        if o.mkdir != nil {
            operations.mkdir = { r, a, b, c in T.of(r).time(.mkdir) { T.of(r).original.mkdir!(r, a, b, c) } }
        }
        if o.unlink != nil {
            operations.unlink = { r, a, b in T.of(r).time(.unlink) { T.of(r).original.unlink!(r, a, b) } }
        }
        if o.rmdir != nil {
            operations.rmdir = { r, a, b in T.of(r).time(.rmdir) { T.of(r).original.rmdir!(r, a, b) } }
        }
        if o.symlink != nil {
            operations.symlink = { r, a, b, c in T.of(r).time(.symlink) { T.of(r).original.symlink!(r, a, b, c) } }
        }
        if o.rename != nil {
            operations.rename = { r, a, b, c, d, e in
                T.of(r).time(.rename) { T.of(r).original.rename!(r, a, b, c, d, e) }
            }
        }
        if o.link != nil {
            operations.link = { r, a, b, c in T.of(r).time(.link) { T.of(r).original.link!(r, a, b, c) } }
        }
        wrapFiles(&operations, o)
    }

    private func wrapFiles(_ operations: inout fuse_lowlevel_ops, _ o: fuse_lowlevel_ops) {
        typealias T = FuseOperationTiming
        if o.open != nil {
            operations.open = { r, a, b in T.of(r).time(.open) { T.of(r).original.open!(r, a, b) } }
        }
        if o.read != nil {
            operations.read = { r, a, b, c, d in T.of(r).time(.read) { T.of(r).original.read!(r, a, b, c, d) } }
        }
        if o.write != nil {
            operations.write = { r, a, b, c, d, e in
                T.of(r).time(.write) { T.of(r).original.write!(r, a, b, c, d, e) }
            }
        }
        if o.write_buf != nil {
            operations.write_buf = { r, a, b, c, d in
                T.of(r).time(.write) { T.of(r).original.write_buf!(r, a, b, c, d) }
            }
        }
        if o.flush != nil {
            operations.flush = { r, a, b in T.of(r).time(.flush) { T.of(r).original.flush!(r, a, b) } }
        }
        if o.release != nil {
            operations.release = { r, a, b in T.of(r).time(.release) { T.of(r).original.release!(r, a, b) } }
        }
        if o.fsync != nil {
            operations.fsync = { r, a, b, c in T.of(r).time(.fsync) { T.of(r).original.fsync!(r, a, b, c) } }
        }
        if o.create != nil {
            operations.create = { r, a, b, c, d in T.of(r).time(.create) { T.of(r).original.create!(r, a, b, c, d) } }
        }
        if o.fallocate != nil {
            operations.fallocate = { r, a, b, c, d, e in
                T.of(r).time(.fallocate) { T.of(r).original.fallocate!(r, a, b, c, d, e) }
            }
        }
        if o.lseek != nil {
            operations.lseek = { r, a, b, c, d in T.of(r).time(.lseek) { T.of(r).original.lseek!(r, a, b, c, d) } }
        }
        if o.getlk != nil {
            operations.getlk = { r, a, b, c in T.of(r).time(.getlk) { T.of(r).original.getlk!(r, a, b, c) } }
        }
        if o.setlk != nil {
            operations.setlk = { r, a, b, c, d in T.of(r).time(.setlk) { T.of(r).original.setlk!(r, a, b, c, d) } }
        }
        if o.flock != nil {
            operations.flock = { r, a, b, c in T.of(r).time(.flock) { T.of(r).original.flock!(r, a, b, c) } }
        }
        wrapDirectories(&operations, o)
    }

    private func wrapDirectories(_ operations: inout fuse_lowlevel_ops, _ o: fuse_lowlevel_ops) {
        typealias T = FuseOperationTiming
        if o.opendir != nil {
            operations.opendir = { r, a, b in T.of(r).time(.opendir) { T.of(r).original.opendir!(r, a, b) } }
        }
        if o.readdir != nil {
            operations.readdir = { r, a, b, c, d in
                T.of(r).time(.readdir) { T.of(r).original.readdir!(r, a, b, c, d) }
            }
        }
        if o.readdirplus != nil {
            operations.readdirplus = { r, a, b, c, d in
                T.of(r).time(.readdirplus) { T.of(r).original.readdirplus!(r, a, b, c, d) }
            }
        }
        if o.releasedir != nil {
            operations.releasedir = { r, a, b in T.of(r).time(.releasedir) { T.of(r).original.releasedir!(r, a, b) } }
        }
        if o.fsyncdir != nil {
            operations.fsyncdir = { r, a, b, c in
                T.of(r).time(.fsyncdir) { T.of(r).original.fsyncdir!(r, a, b, c) }
            }
        }
        if o.statfs != nil {
            operations.statfs = { r, a in T.of(r).time(.statfs) { T.of(r).original.statfs!(r, a) } }
        }
        if o.setxattr != nil {
            operations.setxattr = { r, a, b, c, d, e in
                T.of(r).time(.setxattr) { T.of(r).original.setxattr!(r, a, b, c, d, e) }
            }
        }
        if o.getxattr != nil {
            operations.getxattr = { r, a, b, c in
                T.of(r).time(.getxattr) { T.of(r).original.getxattr!(r, a, b, c) }
            }
        }
        if o.listxattr != nil {
            operations.listxattr = { r, a, b in T.of(r).time(.listxattr) { T.of(r).original.listxattr!(r, a, b) } }
        }
        if o.removexattr != nil {
            operations.removexattr = { r, a, b in
                T.of(r).time(.removexattr) { T.of(r).original.removexattr!(r, a, b) }
            }
        }
    }
}
