import Glibc
import Testing

@testable import SyncFS

@Suite("FSError: the one errno mapping")
struct ErrnoMappingTests {
    /// The expected errno of every case (see doc/SEMANTICS.md). `io` is covered separately.
    static let table: [(FSError, Int32)] = [
        (.notFound, ENOENT),
        (.exists, EEXIST),
        (.notEmpty, ENOTEMPTY),
        (.notDirectory, ENOTDIR),
        (.isDirectory, EISDIR),
        (.invalidArgument, EINVAL),
        (.nameTooLong, ENAMETOOLONG),
        (.notPermitted, EPERM),
        (.accessDenied, EACCES),
        (.noAttribute, ENODATA),
        (.range, ERANGE),
        (.notSupported, EOPNOTSUPP),
        (.fileTooLarge, EFBIG),
        (.tooManyLinks, EMLINK),
        (.badHandle, EBADF),
        (.noSpace, ENOSPC),
        (.loop, ELOOP),
        (.beyondData, ENXIO),
        (.containerUnreachable, ENETDOWN),
        (.contentUnavailable, EREMOTEIO),
        (.stale, ESTALE),
    ]

    /// A name per case; the exhaustive switch makes this file stop compiling when a case is
    /// added, so the table above cannot silently miss it.
    static func caseName(_ error: FSError) -> String {
        switch error {
        case .notFound: "notFound"
        case .exists: "exists"
        case .notEmpty: "notEmpty"
        case .notDirectory: "notDirectory"
        case .isDirectory: "isDirectory"
        case .invalidArgument: "invalidArgument"
        case .nameTooLong: "nameTooLong"
        case .notPermitted: "notPermitted"
        case .accessDenied: "accessDenied"
        case .noAttribute: "noAttribute"
        case .range: "range"
        case .notSupported: "notSupported"
        case .fileTooLarge: "fileTooLarge"
        case .tooManyLinks: "tooManyLinks"
        case .badHandle: "badHandle"
        case .noSpace: "noSpace"
        case .loop: "loop"
        case .beyondData: "beyondData"
        case .io: "io"
        case .containerUnreachable: "containerUnreachable"
        case .contentUnavailable: "contentUnavailable"
        case .stale: "stale"
        }
    }

    /// Number of cases of `FSError`; keep in step with `caseName`.
    static let caseCount = 22

    @Test(arguments: table.map { TableRow(error: $0.0, errno: $0.1) })
    func caseMapsToItsErrno(_ row: TableRow) {
        #expect(row.error.errno == row.errno, "\(Self.caseName(row.error))")
    }

    @Test func tableCoversEveryCaseOnce() {
        let names = Self.table.map { Self.caseName($0.0) } + [Self.caseName(.io(EIO))]
        #expect(Set(names).count == names.count, "no case twice")
        #expect(names.count == Self.caseCount)
    }

    @Test func distinctCasesGiveDistinctErrnos() {
        let codes = Self.table.map { $0.0.errno }
        #expect(Set(codes).count == codes.count)
        #expect(!codes.contains(EIO), "EIO is reserved for disk failures")
        #expect(codes.allSatisfy { $0 > 0 })
    }

    @Test(arguments: [EIO, EROFS, EACCES, EMFILE, EDQUOT, ENOSPC])
    func ioCarriesItsOwnErrno(_ code: Int32) {
        #expect(FSError.io(code).errno == code)
    }

    @Test func ioWithoutAnErrnoIsEIO() {
        #expect(FSError.io(0).errno == EIO)
    }

    @Test(arguments: [
        TableRow(error: .notFound, errno: ENOENT),
        TableRow(error: .noSpace, errno: ENOSPC),
        TableRow(error: .noSpace, errno: EDQUOT),
        TableRow(error: .fileTooLarge, errno: EFBIG),
        TableRow(error: .invalidArgument, errno: EINVAL),
        TableRow(error: .notSupported, errno: EOPNOTSUPP),
        TableRow(error: .io(EIO), errno: EIO),
        TableRow(error: .io(EACCES), errno: EACCES),
        TableRow(error: .io(EROFS), errno: EROFS),
        TableRow(error: .io(EBADF), errno: EBADF),
        TableRow(error: .io(EMFILE), errno: EMFILE),
    ])
    func fromErrnoMapsTheDiskErrno(_ row: TableRow) {
        #expect(FSError.fromErrno(row.errno) == row.error)
    }

    @Test(arguments: [ENOENT, ENOSPC, EFBIG, EINVAL, EOPNOTSUPP, EIO, EACCES, EROFS, ENOTDIR, EXDEV])
    func fromErrnoRoundTripsToTheSameErrno(_ code: Int32) {
        #expect(FSError.fromErrno(code).errno == code)
    }

    @Test func fromErrnoReadsTheCurrentErrnoByDefault() {
        // A failing system call sets errno; the default argument picks it up.
        #expect(close(-1) == -1)
        #expect(FSError.fromErrno() == .io(EBADF))
        #expect(access("/nonexistent-syncfs-test-path/x", F_OK) == -1)
        #expect(FSError.fromErrno() == .notFound)
    }
}

/// One row of an errno table, printable in test results.
struct TableRow: Sendable, CustomTestStringConvertible {
    let error: FSError
    let errno: Int32
    var testDescription: String { "\(ErrnoMappingTests.caseName(error)) ↔ \(errno)" }
}
