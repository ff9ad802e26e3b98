import Foundation

/// Command lines written in documentation (man page examples, README blocks), checked against
/// the command definitions (`syncfs-mount --experimental-dump-help`): each `syncfs-mount …`
/// names a subcommand that exists and only options that subcommand has.
struct DocumentedCommands {
    private let root: [String: Any]

    init(dumpHelp json: String) throws {
        guard let dump = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            let command = dump["command"] as? [String: Any]
        else { throw TestFolderError(message: "--experimental-dump-help is not the expected JSON") }
        root = command
    }

    /// The `syncfs-mount` commands in a line of shell: each from the word `syncfs-mount` up to
    /// a shell operator (`|`, `>`, `&&`, `;`, `)`, …).
    static func commands(inShellLine line: String) -> [[String]] {
        var commands: [[String]] = []
        var current: [String]?
        for word in shellWords(line) {
            if operators.contains(word) || word.hasPrefix(">") || word.hasPrefix("2>") {
                if let done = current { commands.append(done) }
                current = nil
            } else if word == "syncfs-mount" {
                if let done = current { commands.append(done) }
                current = [word]
            } else {
                current?.append(word)
            }
        }
        if let done = current { commands.append(done) }
        return commands
    }

    private static let operators: Set<String> = ["|", "||", "&&", ";", "&", "(", ")", "<"]

    /// Words as the shell splits them (quotes removed; `(`, `)` and `;` are words of their own;
    /// a `#` starting a word begins a comment).
    static func shellWords(_ line: String) -> [String] {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        for character in line {
            if let open = quote {
                if character == open { quote = nil } else { word.append(character) }
                continue
            }
            switch character {
            case "'", "\"":
                quote = character
                inWord = true
            case " ", "\t":
                if inWord { words.append(word) }
                (word, inWord) = ("", false)
            case "(", ")", ";":
                if inWord { words.append(word) }
                words.append(String(character))
                (word, inWord) = ("", false)
            case "#" where !inWord:
                return words
            default:
                word.append(character)
                inWord = true
            }
        }
        if inWord { words.append(word) }
        return words
    }

    /// What is wrong with `words` (`syncfs-mount SUBCOMMAND … ARGUMENTS`), or nil.
    func problem(_ words: [String]) -> String? {
        var command = root
        var rest = words.dropFirst()
        while let word = rest.first,
            let sub = (command["subcommands"] as? [[String: Any]])?.first(where: {
                $0["commandName"] as? String == word
            })
        {
            command = sub
            rest = rest.dropFirst()
        }
        if command["commandName"] as? String == root["commandName"] as? String {
            return "no subcommand: \(words.joined(separator: " "))"
        }
        if command["subcommands"] != nil, rest.first.map({ !$0.hasPrefix("-") }) == true {
            return "no subcommand \(rest.first!) of \(command["commandName"] ?? "")"
        }
        let arguments = command["arguments"] as? [[String: Any]] ?? []
        func option(_ kind: String, _ name: String) -> [String: Any]? {
            arguments.first { argument in
                (argument["names"] as? [[String: String]] ?? []).contains { $0["kind"] == kind && $0["name"] == name }
            }
        }
        var index = rest.startIndex
        while index < rest.endIndex {
            let word = rest[index]
            index += 1
            let spelled: (kind: String, name: String)?
            if word.hasPrefix("--") {
                spelled = ("long", String(word.dropFirst(2).prefix { $0 != "=" }))
            } else if word.hasPrefix("-"), word.count == 2 {
                spelled = ("short", String(word.dropFirst()))
            } else {
                spelled = nil
            }
            guard let spelled else { continue }
            guard let found = option(spelled.kind, spelled.name) else {
                return "\(command["commandName"] ?? "") has no option \(word): \(words.joined(separator: " "))"
            }
            if found["kind"] as? String == "option", !word.contains("=") { index += 1 }
        }
        return nil
    }
}
