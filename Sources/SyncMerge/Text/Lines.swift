import Foundation

/// A text split into lines. Every line ends just after a "\n" (so a CRLF line ends in "\r\n"),
/// except perhaps the last one, which is a line too. Empty text has no lines.
struct Lines {
    let bytes: [UInt8]
    /// The end offset (exclusive) of each line; a line starts where the previous one ends.
    let ends: [Int]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        var ends: [Int] = []
        ends.reserveCapacity(bytes.count / 32 + 1)
        bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            let raw = UnsafeRawPointer(base)
            var start = 0
            while start < buffer.count {
                if let hit = memchr(raw + start, 0x0A, buffer.count - start) {
                    start = raw.distance(to: UnsafeRawPointer(hit)) + 1
                } else {
                    start = buffer.count
                }
                ends.append(start)
            }
        }
        self.ends = ends
    }

    var count: Int { ends.count }

    func start(of line: Int) -> Int { line == 0 ? 0 : ends[line - 1] }

    /// The bytes of `lines` (a range of line numbers).
    func bytes(of lines: Range<Int>) -> ArraySlice<UInt8> {
        guard !lines.isEmpty else { return [] }
        return bytes[start(of: lines.lowerBound)..<ends[lines.upperBound - 1]]
    }

    /// True when the text is empty or ends with "\n".
    var endsWithNewline: Bool { bytes.last.map { $0 == 0x0A } ?? true }

    /// How many lines end in "\r\n" and how many in a bare "\n".
    var lineEndingCounts: (crlf: Int, lf: Int) {
        var crlf = 0
        var lf = 0
        for end in ends where bytes[end - 1] == 0x0A {
            if end >= 2 && bytes[end - 2] == 0x0D { crlf += 1 } else { lf += 1 }
        }
        return (crlf, lf)
    }
}

extension Lines {
    /// The line ending the texts use most: "\r\n" when more of their lines end in "\r\n" than in a
    /// bare "\n", else "\n" (so also when no line ends at all).
    static func dominantLineEnding(_ texts: [Lines]) -> [UInt8] {
        var crlf = 0
        var lf = 0
        for text in texts {
            let counts = text.lineEndingCounts
            crlf += counts.crlf
            lf += counts.lf
        }
        return crlf > lf ? [0x0D, 0x0A] : [0x0A]
    }
}
