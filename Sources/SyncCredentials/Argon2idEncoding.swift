/// The parts of an Argon2id encoding, `$argon2id$v=19$m=M,t=T,p=P$SALT$HASH` (the PHC string
/// libargon2 writes: SALT and HASH in unpadded standard base64), read without libargon2.
///
/// A stored encoding is not trusted: a damaged or hostile row could ask for any memory and time.
/// Parsing refuses everything but Argon2id version 19 with costs inside the bounds below, so
/// nothing outside them ever reaches the library.
struct Argon2idEncoding: Equatable {
    /// Memory in KiB, 8 × parallelism ... 1 GiB (libargon2's least is 8 blocks of 1 KiB per lane).
    var memoryKiB: UInt32
    /// Passes over the memory, 1 ... 20.
    var iterations: UInt32
    /// Lanes, 1 ... 8.
    var parallelism: UInt32
    /// The lengths of the salt and of the hash, in bytes.
    var saltLength: Int
    var hashLength: Int

    static let maximumMemoryKiB: UInt32 = 1 << 20
    static let maximumIterations: UInt32 = 20
    static let maximumParallelism: UInt32 = 8
    static let saltLengths = 8...64
    static let hashLengths = 16...64
    /// Longer than any encoding inside the bounds above.
    static let maximumEncodedLength = 256

    /// The parts of `encoded`, or nil when it is not an Argon2id version 19 encoding inside the
    /// bounds (another variant, another version, a missing or extra part, a number that is not
    /// plain decimal, base64 that is not canonical).
    init?(_ encoded: String) {
        let bytes = Array(encoded.utf8)
        guard bytes.count <= Self.maximumEncodedLength else { return nil }
        let parts = bytes.split(separator: UInt8(ascii: "$"), omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0].isEmpty, parts[1].elementsEqual("argon2id".utf8),
            parts[2].elementsEqual("v=19".utf8)
        else { return nil }
        let costs = parts[3].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
        guard costs.count == 3,
            let memory = Self.number(named: "m", in: costs[0]),
            let iterations = Self.number(named: "t", in: costs[1]),
            let parallelism = Self.number(named: "p", in: costs[2]),
            (1...Self.maximumParallelism).contains(parallelism),
            (1...Self.maximumIterations).contains(iterations),
            (8 * parallelism...Self.maximumMemoryKiB).contains(memory),
            let saltLength = Self.base64Length(parts[4]), Self.saltLengths.contains(saltLength),
            let hashLength = Self.base64Length(parts[5]), Self.hashLengths.contains(hashLength)
        else { return nil }
        self.memoryKiB = memory
        self.iterations = iterations
        self.parallelism = parallelism
        self.saltLength = saltLength
        self.hashLength = hashLength
    }

    /// The value of `name=DIGITS`: plain decimal, no sign, no leading zero, at most 10 digits.
    private static func number(named name: Character, in text: ArraySlice<UInt8>) -> UInt32? {
        let digits = text.dropFirst(2)
        guard text.count >= 3, text.first == name.asciiValue, text.dropFirst().first == UInt8(ascii: "="),
            digits.count <= 10, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            digits.count == 1 || digits.first != UInt8(ascii: "0")
        else { return nil }
        let value = digits.reduce(UInt64(0)) { $0 * 10 + UInt64($1 - UInt8(ascii: "0")) }
        return UInt32(exactly: value)
    }

    /// How many bytes unpadded standard base64 `text` decodes to, or nil when it is not such
    /// base64: a character outside `A-Z a-z 0-9 + /`, a length no byte count encodes to, or
    /// leftover bits in its last character that are not zero.
    private static func base64Length(_ text: ArraySlice<UInt8>) -> Int? {
        var lastValue: UInt8 = 0
        for character in text {
            guard let value = base64Value(character) else { return nil }
            lastValue = value
        }
        switch text.count % 4 {
        case 0: return text.count / 4 * 3
        case 2: return lastValue & 0x0F == 0 ? text.count / 4 * 3 + 1 : nil
        case 3: return lastValue & 0x03 == 0 ? text.count / 4 * 3 + 2 : nil
        default: return nil
        }
    }

    private static func base64Value(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
