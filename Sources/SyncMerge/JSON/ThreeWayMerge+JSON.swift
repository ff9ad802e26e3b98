extension ThreeWayMerge {
    /// Three-way structural merge of JSON.
    ///
    /// - Objects merge key by key, recursively: a key added, changed or removed on one side is
    ///   applied; both sides setting a key to equal values is fine; to different values is a
    ///   conflict, unless both values are objects, which merge recursively (against the base's
    ///   value when it is an object, else against an empty object). A key removed on one side and
    ///   changed on the other is a conflict; removed on both, it is gone.
    /// - Arrays and scalars are atomic: changed on one side → that side's value; changed on both
    ///   to different values → conflict.
    /// - Values compare as JSON (`JSONValue.isSame`): key order, whitespace, string escapes and
    ///   the spelling of numbers (`1.0` = `1`) are not changes.
    /// - Any version that is not valid JSON (`JSONParser`: RFC 8259, plus no duplicate keys and at
    ///   most 512 levels) → `.conflicted`. An empty (or whitespace-only) **base** counts as `{}`:
    ///   a file created empty and then filled with settings on two machines merges key by key. An
    ///   empty local or remote version is not JSON.
    /// - As for every merge, a side equal (byte for byte) to the base or to the other side means
    ///   nothing to merge: the result is the changed side's bytes, valid JSON or not.
    ///
    /// Output: the local document's bytes before and after its value (byte order mark, leading
    /// whitespace, trailing newline) are kept. Every value the merge took from local unchanged is
    /// written as its exact local bytes (an object only remote-free changes touched included:
    /// a merge remote contributed nothing to returns local's bytes exactly). Merged objects list
    /// local's keys in local's order, then the keys remote added, in remote's order; they and the
    /// values taken from remote or base are written in the local document's style
    /// (`JSONStyle.detect`: indentation width and characters, line break, colon spacing, compact
    /// or pretty; from remote or base when local shows none), and strings and numbers keep their
    /// exact text, so `1.0` stays `1.0` and `10000000000000000001` is not rounded.
    public static func json(base: [UInt8], local: [UInt8], remote: [UInt8]) -> MergeOutcome {
        if let result = trivial(base: base, local: local, remote: remote) { return .merged(result) }
        let baseDocument = JSONParser.isBlank(base) ? nil : JSONParser.parse(base)
        guard JSONParser.isBlank(base) || baseDocument != nil,
            let localDocument = JSONParser.parse(local),
            let remoteDocument = JSONParser.parse(remote)
        else { return .conflicted }
        let baseRoot =
            baseDocument?.root ?? JSONValue(kind: .object(JSONObject(members: [], index: [:])), span: 0..<0)
        let merger = JSONMerger(localBytes: local, remoteBytes: remote)
        guard let merged = merger.merge(base: baseRoot, local: localDocument.root, remote: remoteDocument.root)
        else { return .conflicted }
        if case .local = merged { return .merged(local) }
        let style =
            JSONStyle.detect(localDocument) ?? JSONStyle.detect(remoteDocument) ?? baseDocument.flatMap(
                JSONStyle.detect)
            ?? .standard
        var writer = JSONWriter(style: style, localBytes: local)
        writer.write(merged, depth: 0)
        let root = localDocument.root.span
        return .merged(Array(local[..<root.lowerBound]) + writer.output + local[root.upperBound...])
    }
}

/// The value-by-value merge behind `ThreeWayMerge.json`; nil means a conflict.
private struct JSONMerger {
    let localBytes: [UInt8]
    let remoteBytes: [UInt8]

    func merge(base: JSONValue?, local: JSONValue, remote: JSONValue) -> MergedJSON? {
        if local.isSame(as: remote) { return .local(local) }
        if let base, local.isSame(as: base) { return .other(remote, document: remoteBytes) }
        if let base, remote.isSame(as: base) { return .local(local) }
        guard case .object(let localObject) = local.kind, case .object(let remoteObject) = remote.kind else {
            return nil
        }
        var baseObject = JSONObject(members: [], index: [:])
        if let base, case .object(let object) = base.kind { baseObject = object }
        return mergeObjects(base: baseObject, local: local, localObject, remote: remoteObject)
    }

    private func mergeObjects(
        base: JSONObject, local: JSONValue, _ localObject: JSONObject, remote: JSONObject
    ) -> MergedJSON? {
        var members: [MergedMember] = []
        var unchanged = true  // the result is local's object as it is
        for member in localObject.members {
            let key = localBytes[member.keySpan]
            let baseValue = base.member(member.key)?.value
            if let remoteMember = remote.member(member.key) {
                guard let value = merge(base: baseValue, local: member.value, remote: remoteMember.value) else {
                    return nil
                }
                if case .local = value {} else { unchanged = false }
                members.append(MergedMember(key: key, value: value))
            } else if let baseValue {
                // Remote removed the key: fine if local kept its value, a conflict if local changed it.
                guard member.value.isSame(as: baseValue) else { return nil }
                unchanged = false
            } else {
                members.append(MergedMember(key: key, value: .local(member.value)))
            }
        }
        for member in remote.members where localObject.member(member.key) == nil {
            if let baseValue = base.member(member.key)?.value {
                // Local removed the key: fine if remote kept its value, a conflict if remote changed it.
                guard member.value.isSame(as: baseValue) else { return nil }
            } else {
                let value = MergedJSON.other(member.value, document: remoteBytes)
                members.append(MergedMember(key: remoteBytes[member.keySpan], value: value))
                unchanged = false
            }
        }
        return unchanged ? .local(local) : .object(members)
    }
}
