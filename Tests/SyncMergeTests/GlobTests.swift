import Testing

@testable import SyncMerge

@Suite("Glob")
struct GlobTests {
    /// (pattern, path, matches)
    static let cases: [(String, String, Bool)] = [
        // Without "/": the last component, at any depth.
        ("*.txt", "a.txt", true),
        ("*.txt", "notes/deep/b.txt", true),
        ("*.txt", "a.txt/c", false),
        ("*.txt", "a.txt.bak", false),
        ("a.txt", "x/y/a.txt", true),
        ("a.txt", "xa.txt", false),
        ("*", "anything/at/all", true),
        // With "/": anchored at the root.
        ("docs/*.md", "docs/a.md", true),
        ("docs/*.md", "x/docs/a.md", false),
        ("docs/*.md", "docs/sub/a.md", false),
        ("/docs/*.md", "docs/a.md", true),
        ("/a.txt", "a.txt", true),
        ("/a.txt", "x/a.txt", false),
        // A trailing "/": everything below a matching directory.
        ("build/", "build/a.o", true),
        ("build/", "src/build/x/y.o", true),
        ("build/", "build", false),
        ("build/", "rebuild/a", false),
        ("/build/", "src/build/a", false),
        ("/build/", "build/a", true),
        // * and ? never cross "/".
        ("a*b", "axxb", true),
        ("a*b", "ab", true),
        ("a/*/c", "a/b/c", true),
        ("a/*/c", "a/b/x/c", false),
        ("a?c", "abc", true),
        ("a?c", "ac", false),
        ("a/?/c", "a///c", false),
        ("?.txt", "é.txt", true),
        // **
        ("**/build/*.o", "build/a.o", true),
        ("**/build/*.o", "x/y/build/a.o", true),
        ("a/**/b", "a/b", true),
        ("a/**/b", "a/x/b", true),
        ("a/**/b", "a/x/y/b", true),
        ("a/**/b", "ab", false),
        ("a/**/b", "a/xb", false),
        ("logs/**", "logs/a", true),
        ("logs/**", "logs/a/b", true),
        ("logs/**", "logs", false),
        ("logs/**", "x/logs/a", false),
        ("**", "x/y", true),
        ("a**b", "a/b", false),
        ("a**b", "axyb", true),
        // Classes.
        ("[abc].txt", "b.txt", true),
        ("[abc].txt", "d.txt", false),
        ("[a-c]x", "cx", true),
        ("[a-c]x", "dx", false),
        ("[!a]*", "b", true),
        ("[!a]*", "abc", false),
        ("[^a]*", "abc", false),
        ("[]]", "]", true),
        ("[!]]", "]", false),
        ("[a-]", "-", true),
        ("x[/]y", "x/y", false),
        ("[é]", "é", true),
        // Escapes.
        ("\\*.txt", "*.txt", true),
        ("\\*.txt", "a.txt", false),
        ("\\?", "?", true),
        ("\\?", "a", false),
        ("\\[a]", "[a]", true),
        ("my\\ file", "my file", true),
        ("a\\\\b", "a\\b", true),
        ("[\\]]", "]", true),
        // Case-sensitive.
        ("*.TXT", "a.txt", false),
        ("Makefile", "makefile", false),
    ]

    @Test(arguments: cases)
    func matches(_ pattern: String, _ path: String, _ expected: Bool) throws {
        #expect(try Glob(pattern).matches(path) == expected)
    }

    @Test(arguments: ["", "/", "a\\", "[abc", "[z-a]", "[!", "a[\\"])
    func invalidPatterns(_ pattern: String) {
        #expect(throws: Glob.SyntaxError.self) { try Glob(pattern) }
    }

    @Test func longPathsDoNotBacktrackForever() throws {
        let glob = try Glob("**/a*a*a*a*a*a*b/**")
        #expect(!glob.matches(String(repeating: "a/", count: 200) + String(repeating: "a", count: 200)))
    }
}
