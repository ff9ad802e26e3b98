import ArgumentParser
import SyncBackend

extension ExitCode {
    /// The process ends with `status`: every exit of `syncfs-mount` names one of `ExitStatus`
    /// (ArgumentParser's own parse errors exit 64 too, its `validationFailure`, EX_USAGE).
    init(_ status: ExitStatus) { self.init(status.rawValue) }
}
