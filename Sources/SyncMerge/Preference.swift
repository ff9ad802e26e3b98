/// The preferences that compare the two changed versions (`prefer=larger`, `prefer=smaller`,
/// `prefer=max(json:…)`, `prefer=min(json:…)`): the version that compares as asked wins; when
/// they cannot be told apart (a tie) or compared (a value missing, not a number, a version not
/// JSON), the step falls through to the next one of the chain.
enum Preference {
    /// Which of the two versions the comparison favours.
    private enum Want {
        case greater
        case smaller
    }

    static func decide(_ policy: MergePolicy, _ versions: MergeVersions) -> MergeStepOutcome {
        switch policy {
        case .larger: return bySize(versions, want: .greater)
        case .smaller: return bySize(versions, want: .smaller)
        case .maximum(let pointer): return byNumber(at: pointer, versions, want: .greater)
        case .minimum(let pointer): return byNumber(at: pointer, versions, want: .smaller)
        default: return .fallThrough("\(policy) is not a comparison")
        }
    }

    private static func bySize(_ versions: MergeVersions, want: Want) -> MergeStepOutcome {
        let (local, remote) = (versions.localSize, versions.remoteSize)
        if local == remote { return .fallThrough("both versions have the same size (\(local) bytes)") }
        return (local > remote) == (want == .greater) ? .local : .remote
    }

    private static func byNumber(at pointer: JSONPointer, _ versions: MergeVersions, want: Want) -> MergeStepOutcome {
        let shown = quoted(pointer)
        guard let content = versions.content else {
            return .fallThrough("both changed the content; too large to compare \(shown)")
        }
        var numbers: [JSONNumber] = []
        for (side, bytes) in [("local", content.local), ("remote", content.remote)] {
            guard let document = JSONParser.parse(bytes) else {
                return .fallThrough("the \(side) version is not valid JSON")
            }
            guard let value = pointer.value(in: document.root) else {
                return .fallThrough("the \(side) version has no value at \(shown)")
            }
            guard case .number(let number) = value.kind else {
                return .fallThrough("the \(side) version's value at \(shown) is not a number")
            }
            numbers.append(number)
        }
        switch numbers[0].compared(to: numbers[1]) {
        case nil: return .fallThrough("a number at \(shown) is too large to compare")
        case .equal: return .fallThrough("both versions have the same number at \(shown)")
        case .greater: return want == .greater ? .local : .remote
        case .less: return want == .greater ? .remote : .local
        }
    }

    /// A pointer from a synced file, for a message: quoted, control characters as "?", at most
    /// 80 characters.
    private static func quoted(_ pointer: JSONPointer) -> String {
        let text = String(pointer.text.map { $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true ? "?" : $0 })
        return "\"" + (text.count > 80 ? text.prefix(79) + "…" : text) + "\""
    }
}
