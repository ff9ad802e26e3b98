import Testing

@testable import SyncServer

/// The web page's templates escape what they are given, whatever the Unicode around it.
@Suite struct WebTemplatesTests {
    /// Names that pass an escape by grapheme cluster: a quote with a combining accent, a `<` after
    /// a prepended mark, and the plain cases.
    static let hostileNames = [
        "x\"\u{301} type=submit formaction=/c/team/delete", "\u{600}<meta http-equiv=refresh content=0>",
        "<img src=x onerror=alert(1)>", "a'b&c>", "\u{1F600}\"\u{200D}<",
    ]

    @Test(arguments: hostileNames) func aNameIsTextInElementsAndAttributes(name: String) {
        let html = WebTemplates().render(
            "file",
            PageContext(
                WebFrame(title: name, signed: nil),
                [
                    "heading": name, "crumbs": [["name": name, "href": "/c/x/?path=\(name)"]], "size": "1 B",
                    "changes": ["name": name, "path": name, "rename": "/c/x/rename"], "text": name,
                ]))
        // The name appears only escaped: never with a raw quote, angle bracket or ampersand.
        #expect(!html.contains(name), "the raw name reached the page")
        #expect(html.contains(WebHTMLEscaping.escape(name)))
    }

    @Test func theEscapeWorksScalarByScalar() {
        #expect(WebHTMLEscaping.escape("\u{600}<\"\u{301}'&>") == "\u{600}&lt;&quot;\u{301}&#39;&amp;&gt;")
    }

    @Test func timesAndSizesReadAsPeopleWriteThem() {
        #expect(WebFormat.time(0).iso == "1970-01-01T00:00:00Z")
        #expect(WebFormat.time(1_795_996_800).text == "2026-11-30 00:00 UTC")
        #expect(WebFormat.time(951_825_600).iso == "2000-02-29T12:00:00Z")
        #expect(WebFormat.time(-1).iso == "1969-12-31T23:59:59Z")
        #expect(WebFormat.size(999) == "999 B")
        #expect(WebFormat.size(1_500_000) == "1.5 MB")
        #expect(WebFormat.size(999_960) == "1.0 MB")
    }

    @Test func onlyPathsOnThisServerAreRedirectedTo() {
        #expect(WebPaths.isLocal("/c/team/"))
        #expect(!WebPaths.isLocal("//evil.example/"))
        #expect(!WebPaths.isLocal("/\\evil.example/"))
        #expect(!WebPaths.isLocal("https://evil.example/"))
        #expect(!WebPaths.isLocal("/a\r\nSet-Cookie: x"))
        #expect(WebPaths.folder("team", "a b/&c?#") == "/c/team/?path=a%20b%2F%26c%3F%23")
    }

    @Test func aFormIsReadStrictly() throws {
        let form = try WebForm.parse("a=1&b=x+y%2Fz&c=")
        #expect(form["b"] == "x y/z")
        #expect(form["c"] == "")
        #expect(throws: WireFailure.self) { try WebForm.parse("a=1&a=2") }
        #expect(throws: WireFailure.self) { try WebForm.parse("a=%zz") }
    }
}
