import Synchronization

/// A setting read on hot paths and changed rarely, shared by the objects that hold it.
final class SharedFlag: Sendable {
    private let value: Atomic<Bool>

    init(_ initial: Bool = false) { value = Atomic(initial) }

    var isSet: Bool { value.load(ordering: .relaxed) }
    func set(_ newValue: Bool) { value.store(newValue, ordering: .relaxed) }
}
