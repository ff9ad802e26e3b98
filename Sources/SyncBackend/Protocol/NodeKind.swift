/// What kind of object an entry is. Raw values are stored in databases and on the wire.
public enum NodeKind: Int64, Sendable, Codable {
    case file = 1
    case directory = 2
    case symlink = 3
}
