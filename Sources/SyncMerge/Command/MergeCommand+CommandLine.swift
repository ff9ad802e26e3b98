extension MergeCommand {
    /// The shell command line for a `merge=command:` template, git merge-driver style:
    /// - `%O` the base version's file,
    /// - `%A` the local version's file — the command writes the merged result there,
    /// - `%B` the remote version's file,
    /// - `%P` the file's path in the folder,
    /// - `%%` a percent sign.
    ///
    /// Each value is inserted as one shell word in single quotes (a `'` inside becomes `'\''`),
    /// so names with spaces, quotes or `$` reach the command unchanged; write the placeholders
    /// bare in the template, not inside quotes. Any other `%` (followed by another character, or
    /// last) is left as it is.
    public static func commandLine(_ template: String, base: String, local: String, remote: String, path: String)
        -> String
    {
        var result = ""
        var characters = template.makeIterator()
        while let character = characters.next() {
            guard character == "%" else {
                result.append(character)
                continue
            }
            switch characters.next() {
            case "O": result += shellQuoted(base)
            case "A": result += shellQuoted(local)
            case "B": result += shellQuoted(remote)
            case "P": result += shellQuoted(path)
            case "%": result += "%"
            case let other?:
                result.append("%")
                result.append(other)
            case nil: result.append("%")
            }
        }
        return result
    }

    /// `value` as one single-quoted shell word.
    public static func shellQuoted(_ value: String) -> String {
        "'" + value.replacing("'", with: "'\\''") + "'"
    }
}
