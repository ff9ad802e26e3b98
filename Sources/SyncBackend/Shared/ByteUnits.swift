import Foundation

/// The units of a number of bytes on the command line (`--cache-size`, `--quota`, a RATE), each
/// lowercased with its bytes: none or `b`; SI `kb`, `mb`, `gb`, `tb` (powers of 1000); IEC
/// `kib` … `tib` and the short `k`, `m`, `g`, `t` (powers of 1024).
package enum ByteUnits {
    package static let multipliers: [String: Double] = {
        var units: [String: Double] = ["": 1, "b": 1]
        for (power, letter) in ["k", "m", "g", "t"].enumerated() {
            let exponent = Double(power + 1)
            units[letter] = pow(1024, exponent)
            units[letter + "ib"] = pow(1024, exponent)
            units[letter + "b"] = pow(1000, exponent)
        }
        return units
    }()
}
