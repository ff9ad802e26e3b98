/// A JSON number's exact decimal value, for comparing numbers however written (`1.0`, `1`,
/// `10e-1` and `0.1E1` are equal; `-0` equals `0`). No binary floating point is involved, so
/// `10000000000000000001` differs from `10000000000000000000`.
enum JSONNumber: Equatable {
    /// ±digits × 10^exponent, with no leading or trailing zero digits (zero: no digits, positive).
    case decimal(negative: Bool, digits: [UInt8], exponent: Int)
    /// An exponent too large to compute with: compared by its exact text.
    case lexeme([UInt8])

    /// From a lexeme the parser validated: `-? int frac? exp?`.
    init(lexeme: ArraySlice<UInt8>) {
        var index = lexeme.startIndex
        let negative = lexeme[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        var digits: [UInt8] = []
        var fractionDigits = 0
        var inFraction = false
        while index < lexeme.endIndex {
            let byte = lexeme[index]
            if byte == UInt8(ascii: ".") {
                inFraction = true
            } else if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                digits.append(byte)
                if inFraction { fractionDigits += 1 }
            } else {
                break
            }
            index += 1
        }
        var exponent = 0
        if index < lexeme.endIndex {  // e or E
            index += 1
            var exponentNegative = false
            if lexeme[index] == UInt8(ascii: "+") || lexeme[index] == UInt8(ascii: "-") {
                exponentNegative = lexeme[index] == UInt8(ascii: "-")
                index += 1
            }
            let exponentDigits = lexeme[index...].drop { $0 == UInt8(ascii: "0") }
            guard exponentDigits.count <= 15 else {
                self = .lexeme(Array(lexeme))
                return
            }
            for digit in exponentDigits { exponent = exponent * 10 + Int(digit - UInt8(ascii: "0")) }
            if exponentNegative { exponent = -exponent }
        }
        exponent -= fractionDigits
        let leadingZeros = digits.prefix { $0 == UInt8(ascii: "0") }.count
        digits.removeFirst(leadingZeros)
        while digits.last == UInt8(ascii: "0") {
            digits.removeLast()
            exponent += 1
        }
        if digits.isEmpty {
            self = .decimal(negative: false, digits: [], exponent: 0)
        } else {
            self = .decimal(negative: negative, digits: digits, exponent: exponent)
        }
    }
}
