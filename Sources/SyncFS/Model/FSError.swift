import Glibc

/// Every way a filesystem operation can fail, as the folder's callers see it.
///
/// Each case maps to exactly one errno in `errno` — the one place where errors become numbers
/// (an exhaustive switch: adding a case forces a decision here).
enum FSError: Error, Equatable, Sendable {
    case notFound
    case exists
    case notEmpty
    case notDirectory
    case isDirectory
    case invalidArgument
    case nameTooLong
    /// An operation the folder refuses by design (hard links, device nodes, FIFOs, sockets).
    case notPermitted
    case accessDenied
    /// No such extended attribute.
    case noAttribute
    /// The caller's buffer is too small for the answer.
    case range
    case notSupported
    case fileTooLarge
    case tooManyLinks
    case badHandle
    case noSpace
    /// Too many symbolic links, or a symlink where a file was required.
    case loop
    /// `SEEK_DATA`/`SEEK_HOLE` past the end of the data.
    case beyondData
    /// A failure of the local disk under the cache or database, with the errno it gave.
    case io(Int32)
    /// A placeholder's content is needed and the container cannot be reached.
    case containerUnreachable
    /// A placeholder's content is needed and the container does not have it intact.
    case contentUnavailable
    /// The content a handle was opened on was replaced by a remote change and is gone.
    case stale

    /// The errno the kernel is told.
    var errno: Int32 {
        switch self {
        case .notFound: return ENOENT
        case .exists: return EEXIST
        case .notEmpty: return ENOTEMPTY
        case .notDirectory: return ENOTDIR
        case .isDirectory: return EISDIR
        case .invalidArgument: return EINVAL
        case .nameTooLong: return ENAMETOOLONG
        case .notPermitted: return EPERM
        case .accessDenied: return EACCES
        case .noAttribute: return ENODATA
        case .range: return ERANGE
        case .notSupported: return EOPNOTSUPP
        case .fileTooLarge: return EFBIG
        case .tooManyLinks: return EMLINK
        case .badHandle: return EBADF
        case .noSpace: return ENOSPC
        case .loop: return ELOOP
        case .beyondData: return ENXIO
        case .io(let code): return code == 0 ? EIO : code
        case .containerUnreachable: return ENETDOWN
        case .contentUnavailable: return EREMOTEIO
        case .stale: return ESTALE
        }
    }

    /// Wraps the current `errno` of a failed system call on the local disk.
    static func fromErrno(_ code: Int32 = Glibc.errno) -> FSError {
        switch code {
        case ENOENT: return .notFound
        case ENOSPC, EDQUOT: return .noSpace
        case EFBIG: return .fileTooLarge
        case EINVAL: return .invalidArgument
        case EOPNOTSUPP: return .notSupported
        default: return .io(code)
        }
    }
}
