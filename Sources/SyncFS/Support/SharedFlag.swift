import Synchronization

/// A setting read on hot paths and changed rarely, shared by the objects that hold it.
public final class SharedFlag: Sendable {
    private let value: Atomic<Bool>

    public init(_ initial: Bool = false) { value = Atomic(initial) }

    public var isSet: Bool { value.load(ordering: .relaxed) }
    public func set(_ newValue: Bool) { value.store(newValue, ordering: .relaxed) }
}
