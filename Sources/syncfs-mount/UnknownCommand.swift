import ArgumentParser
import SyncFS

/// A first argument that is no command (`syncfs-mount stauts`): named as such, with the nearest
/// command by edit distance when one is close, instead of the parser's "unexpected arguments".
enum UnknownCommand {
    /// The message for `arguments` (without argv[0]) when its first word is not a command of
    /// `root`, else nil. Options (`--help`, `--version`) are left to the parser.
    static func message(_ arguments: [String], root: any ParsableCommand.Type) -> String? {
        guard let word = arguments.first, !word.hasPrefix("-") else { return nil }
        let commands = root.configuration.subcommands
        let names = commands.map { $0._commandName } + ["help"]
        guard !names.contains(word) else { return nil }
        let shown = commands.filter { $0.configuration.shouldDisplay }.map { $0._commandName }
        let printable = TerminalText.safe(word)
        guard let nearest = nearest(to: word, among: shown) else {
            return "unknown command '\(printable)'; `syncfs-mount --help` lists the commands"
        }
        return "unknown command '\(printable)'; did you mean '\(nearest)'?"
    }

    /// The name closest to `word` (optimal string alignment distance: insertions, deletions,
    /// substitutions and swaps of neighbours), if it is within a third of the word's length
    /// (at least 2); the first of equals.
    static func nearest(to word: String, among names: [String]) -> String? {
        let limit = max(2, word.count / 3)
        var best: (name: String, distance: Int)?
        for name in names {
            let distance = editDistance(Array(word.lowercased()), Array(name))
            if distance <= limit && distance < (best?.distance ?? Int.max) { best = (name, distance) }
        }
        return best?.name
    }

    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}
