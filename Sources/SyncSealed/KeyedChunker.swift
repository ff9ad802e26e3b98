import Crypto
import SyncBackend

extension EpochKeys {
    /// The chunker of this epoch: the product's sizes (`ContentDefinedChunker.standard`) with a
    /// gear table derived from the epoch's `chunker` key (HKDF-SHA256 expanded to 256 × 8 bytes,
    /// info `gear`). Where cuts fall then depends on the key, so nobody without it can compute a
    /// known file's chunk boundaries; and since every sealed chunk is padded to a size class
    /// (`SealedPadding`), the server does not see the exact lengths from which the table could be
    /// recovered ("Breaking and Fixing Content-Defined Chunking", RWC 2025).
    public var chunker: ContentDefinedChunker {
        let standard = ContentDefinedChunker.standard
        let bytes = HKDF<SHA256>.expand(pseudoRandomKey: chunkerKey, info: Array("gear".utf8), outputByteCount: 256 * 8)
            .withUnsafeBytes { Array($0) }
        let table = (0..<256).map { index in
            bytes[index * 8..<index * 8 + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
        return ContentDefinedChunker(
            minSize: standard.minSize, averageSize: standard.averageSize, maxSize: standard.maxSize, gearTable: table)
    }
}
