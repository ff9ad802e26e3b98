/// Three-way merges of content: `text` (diff3 line merge), `union` (lines of both sides) and
/// `json` (structural). Pure functions of the three versions' bytes.
///
/// Every merge starts the same way: when local and remote are equal, or one side equals the base,
/// there is nothing to merge and the result is the changed side's bytes exactly.
public enum ThreeWayMerge {
    /// The result when at most one side changed, or nil when both did (and differently).
    static func trivial(base: [UInt8], local: [UInt8], remote: [UInt8]) -> [UInt8]? {
        if local == remote || remote == base { return local }
        if local == base { return remote }
        return nil
    }
}
