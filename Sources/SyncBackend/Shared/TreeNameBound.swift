extension TreePage {
    /// The smallest name a page starting after `after` may hold, so that a backend can ask for
    /// `name >= bound` on its (parent, name) index with one query text: nil is the empty name
    /// (every name), and the first name sorting after `after` is `after` followed by a zero byte
    /// (names compare as unsigned bytes, a prefix before its extensions).
    package static func lowestName(after: [UInt8]?) -> [UInt8] {
        guard let after else { return [] }
        return after + [0]
    }
}
