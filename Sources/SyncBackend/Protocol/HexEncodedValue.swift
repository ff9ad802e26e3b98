/// A value whose textual and `Codable` form is a fixed-length hex string (`FileID`, `ChunkHash`).
public protocol HexEncodedValue: Codable {
    /// Nil unless `hex` is a valid textual form.
    init?(hex: String)
    var hex: String { get }
}

extension HexEncodedValue {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = Self(hex: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "bad \(Self.self): \(text)"))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}
