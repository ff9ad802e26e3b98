/// A container that decides how its clients cut files into chunks. A sealed container keys its
/// cuts (and changes the key with each epoch), so that nobody without the key can compute where a
/// known file's chunks begin; every other container leaves it to `ContentDefinedChunker.standard`.
public protocol ChunkingContainer: Container {
    /// The chunker for the next upload (asked once per file).
    var chunker: ContentDefinedChunker { get }
}
