import Foundation

/// A scrape in Prometheus' text format, as the tests read it: the `# TYPE` of each series and
/// every sample (name, labels, value).
struct PrometheusScrape {
    struct Sample {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    let text: String
    /// Series name → `counter`, `gauge` or `histogram`.
    private(set) var types: [String: String] = [:]
    private(set) var samples: [Sample] = []

    init(_ text: String) {
        self.text = text
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                if parts.count == 4 { types[String(parts[2])] = String(parts[3]) }
                continue
            }
            if line.hasPrefix("#") { continue }
            guard let sample = Self.sample(String(line)) else { continue }
            samples.append(sample)
        }
    }

    /// `name{a="x",b="y"} value` or `name value` (label values here hold no `"` or `,`).
    private static func sample(_ line: String) -> Sample? {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
            return nil
        }
        let series = line[..<space]
        guard let brace = series.firstIndex(of: "{") else {
            return Sample(name: String(series), labels: [:], value: value)
        }
        var labels: [String: String] = [:]
        let inside = series[series.index(after: brace)...].dropLast()
        for pair in inside.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            labels[String(parts[0])] = String(parts[1].dropFirst().dropLast())
        }
        return Sample(name: String(series[..<brace]), labels: labels, value: value)
    }

    /// The samples of series `name` (for a histogram: of `name_count`, `_sum` or `_bucket` as asked).
    func values(_ name: String) -> [Sample] { samples.filter { $0.name == name } }

    /// The sum of a counter's or gauge's samples (nil: none).
    func total(_ name: String) -> Double? {
        let found = values(name)
        return found.isEmpty ? nil : found.reduce(0) { $0 + $1.value }
    }

    /// The label names a series' samples carry (`le` of histogram buckets left out).
    func labelNames(_ name: String) -> Set<String> {
        var names = Set<String>()
        for sample in samples where [name, name + "_bucket", name + "_sum", name + "_count"].contains(sample.name) {
            names.formUnion(sample.labels.keys.filter { $0 != "le" })
        }
        return names
    }

    /// `GET url` with curl (a non-2xx answer or no answer throws).
    static func fetch(_ url: String) throws -> PrometheusScrape {
        let result = ModelProcess.run(["curl", "-sS", "--fail", "--max-time", "20", url], timeout: 30)
        guard result.ok else { throw TestFolderError(message: "scrape of \(url) failed: \(result)") }
        return PrometheusScrape(result.stdout)
    }
}

/// The series doc/METRICS.md lists, by section (`serve`, `mount`).
struct DocumentedSeries {
    struct Row {
        var name: String
        var type: String
        var labels: Set<String>
        /// The `Appears` column.
        var appears: String
    }

    /// Section heading (`serve`, `mount`) → its rows.
    private(set) var sections: [String: [Row]] = [:]

    var all: [Row] { sections.values.flatMap { $0 } }

    static func load() throws -> DocumentedSeries {
        let text = try String(contentsOfFile: ReadmeBlocks.packageRoot + "/doc/METRICS.md", encoding: .utf8)
        var document = DocumentedSeries()
        var section = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") {
                section = line.dropFirst(3).trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "")
                continue
            }
            guard line.hasPrefix("| `syncfs_") else { continue }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count >= 6 else { continue }
            // The label names, without the values given in parentheses.
            let names = cells[3].replacingOccurrences(of: #"\([^)]*\)"#, with: "", options: .regularExpression)
            let labels = Set(
                names.split(separator: ",").compactMap { part -> String? in
                    let name = part.trimmingCharacters(in: .whitespaces).split(separator: " ").first.map(String.init)
                    return name.map { $0.replacingOccurrences(of: "`", with: "") }.flatMap { $0.isEmpty ? nil : $0 }
                })
            document.sections[section, default: []].append(
                Row(
                    name: cells[1].replacingOccurrences(of: "`", with: ""), type: cells[2], labels: labels,
                    appears: cells[4]))
        }
        return document
    }
}
