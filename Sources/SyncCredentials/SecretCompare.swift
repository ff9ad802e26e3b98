/// Whether `a` and `b` hold the same bytes, in a time that depends only on their lengths: every
/// byte is compared, with no early exit at the first difference, so the time taken tells an
/// attacker nothing about how much of a guess was right. Different lengths answer false at once
/// (the length is the only thing that leaks).
public func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for index in a.indices {
        difference |= a[index] ^ b[index]
    }
    return difference == 0
}
