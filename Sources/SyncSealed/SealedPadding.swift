/// The sizes a sealed object may have on the server: every chunk and record is padded up to one
/// of them before it is encrypted, so the server sees a size class, never an exact length.
///
/// - Up to 4 KiB: multiples of 512 bytes (a name, a small file: 8 classes in all).
/// - Above: Padmé (Nikitin et al., "Reducing Metadata Leakage from Encrypted Files and
///   Communication with PURBs", PETS 2019): a length L with E = ⌊log2 L⌋ keeps only its top
///   ⌊log2 E⌋ + 1 bits, so at most O(log log L) bits of it leak and the overhead is under
///   1/2^(⌊log2 E⌋+1) (≤ 6.25 % from 4 KiB, ≤ 3.2 % from 64 KiB, ≤ 1.6 % from 4 GiB).
public enum SealedPadding {
    /// The smallest class at least `length` bytes long (512 for an empty object).
    public static func bucket(_ length: Int) -> Int {
        precondition(length >= 0, "a negative length")
        if length <= 4096 { return max(512, (length + 511) / 512 * 512) }
        return padme(length)
    }

    /// Padmé of `length` (> 1).
    static func padme(_ length: Int) -> Int {
        let exponent = Int.bitWidth - 1 - length.leadingZeroBitCount  // ⌊log2 L⌋
        let kept = (Int.bitWidth - 1 - exponent.leadingZeroBitCount) + 1  // ⌊log2 E⌋ + 1
        let dropped = exponent - kept
        guard dropped > 0 else { return length }
        let mask = (1 << dropped) - 1
        return (length + mask) & ~mask
    }
}
