/// How two JSON numbers compare.
enum JSONNumberOrder: Equatable {
    case less
    case equal
    case greater
}

extension JSONNumber {
    /// How `self` compares with `other` as exact decimals (`2` < `10`, `1.0` = `1`, `-0` = `0`,
    /// `10000000000000000001` > `10000000000000000000`); nil when either has an exponent too
    /// large to compute with (`.lexeme`).
    func compared(to other: JSONNumber) -> JSONNumberOrder? {
        guard case .decimal(let negative, let digits, let exponent) = self,
            case .decimal(let otherNegative, let otherDigits, let otherExponent) = other
        else { return nil }
        let sign = digits.isEmpty ? 0 : (negative ? -1 : 1)
        let otherSign = otherDigits.isEmpty ? 0 : (otherNegative ? -1 : 1)
        if sign != otherSign { return sign < otherSign ? .less : .greater }
        if sign == 0 { return .equal }
        let magnitude = Self.compareMagnitudes(digits, exponent, otherDigits, otherExponent)
        guard sign < 0 else { return magnitude }
        switch magnitude {
        case .less: return .greater
        case .greater: return .less
        case .equal: return .equal
        }
    }

    /// Compares 0.d₁d₂… × 10^(exponent + count) of two normalized digit runs (no leading or
    /// trailing zeros, not empty).
    private static func compareMagnitudes(_ a: [UInt8], _ aExponent: Int, _ b: [UInt8], _ bExponent: Int)
        -> JSONNumberOrder
    {
        let aLeading = aExponent + a.count
        let bLeading = bExponent + b.count
        if aLeading != bLeading { return aLeading < bLeading ? .less : .greater }
        for (x, y) in zip(a, b) where x != y { return x < y ? .less : .greater }
        if a.count == b.count { return .equal }
        return a.count < b.count ? .less : .greater
    }
}
