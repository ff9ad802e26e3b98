import Foundation
import Glibc

/// A wait whose condition never held; its description names what was waited for.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public let what: String
    public let timeout: Double
    public var description: String { "timed out after \(timeout) s waiting for: \(what)" }
}

/// Polls `condition` until it holds (→ true) or `timeout` seconds pass (→ false). The first check
/// is immediate; the pauses between checks grow from 1 ms to 20 ms. A condition that throws (a
/// file not there yet) counts as not holding. Blocks the calling thread: async tests use
/// `eventually`.
public func waitUntil(timeout: Double = 15, _ condition: () throws -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    var pause = PollPause()
    while true {
        if (try? condition()) == true { return true }
        if Date() >= deadline { return false }
        usleep(pause.next())
    }
}

/// Polls `condition` as `waitUntil` does, without blocking a thread while it pauses, and throws
/// `WaitTimedOut` naming `what` (worked out when the wait fails, so it can describe what is left)
/// if it does not hold within `timeout` seconds.
public func eventually(
    _ what: @autoclosure () -> String, timeout: Double = 20, _ condition: () async throws -> Bool
) async throws {
    let deadline = Date().addingTimeInterval(timeout)
    var pause = PollPause()
    while true {
        if (try? await condition()) == true { return }
        if Date() >= deadline { throw WaitTimedOut(what: what(), timeout: timeout) }
        try await Task.sleep(for: .microseconds(pause.next()))
    }
}

/// The pauses between polls, in microseconds: 1 ms doubling up to 20 ms.
private struct PollPause {
    private var current: UInt32 = 1_000

    mutating func next() -> UInt32 {
        defer { current = min(current * 2, 20_000) }
        return current
    }
}
