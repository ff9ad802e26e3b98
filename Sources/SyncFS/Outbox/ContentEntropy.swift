import Glibc

/// Whether a file's new content looks encrypted or random, for the mass-delete guard: what an
/// encrypting program writes over files is high-entropy, what an editor, a build or `git`
/// writes over text mostly is not (doc/SEMANTICS.md, "Mass-delete guard").
///
/// The measure is the Shannon entropy of the byte values in a sample of the content (the first
/// `sampleBytes`). Random or encrypted bytes come close to 8 bits per byte; text lies near 4–5,
/// and compressed formats (JPEG, zip) near 8 too, so rewriting many of those counts as well.
/// Samples shorter than `minimumSample` are never high-entropy: a few bytes say nothing.
enum ContentEntropy {
    static let sampleBytes = 64 * 1024
    static let minimumSample = 512
    /// Bits per byte from which a sample counts as high-entropy. 512 random bytes measure about
    /// 7.6; text 4–5.5; source code and JSON below 6.
    static let highBitsPerByte = 7.0

    /// The Shannon entropy of `bytes`, in bits per byte (0 for none).
    static func bitsPerByte(_ bytes: UnsafeRawBufferPointer) -> Double {
        guard !bytes.isEmpty else { return 0 }
        var counts = [Int](repeating: 0, count: 256)
        for byte in bytes { counts[Int(byte)] += 1 }
        let total = Double(bytes.count)
        var bits = 0.0
        for count in counts where count > 0 {
            let share = Double(count) / total
            bits -= share * log2(share)
        }
        return bits
    }

    /// True if `bytes` are a sample long enough to judge and look random.
    static func isHigh(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= minimumSample && bitsPerByte(bytes) >= highBitsPerByte
    }

    /// True if the first bytes of the open file `descriptor` look random (`isHigh`); false if
    /// they cannot be read. Reads at most `sampleBytes` with `pread`, so the descriptor's offset
    /// stays.
    static func isHigh(descriptor: Int32) -> Bool {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: sampleBytes, alignment: 16)
        defer { buffer.deallocate() }
        var filled = 0
        while filled < sampleBytes {
            let got = pread(descriptor, buffer.baseAddress! + filled, sampleBytes - filled, off_t(filled))
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            filled += got
        }
        return isHigh(UnsafeRawBufferPointer(rebasing: buffer[..<filled]))
    }
}
