import Crypto

/// The page's style sheet and script, served from paths that name their content's digest (so
/// they can be cached for good and never go stale).
enum WebAssets {
    static let stylePath = "/static/syncfs-\(tag(style)).css"
    static let scriptPath = "/static/syncfs-\(tag(script)).js"
    /// The script of a sealed container's page only (`WebSealedScript`).
    static let sealedScriptPath = "/static/syncfs-sealed-\(tag(WebSealedScript.text)).js"

    private static func tag(_ text: String) -> String {
        TokenFormat.hex(Array(SHA256.hash(data: Array(text.utf8)).prefix(6)))
    }

    static let style = """
        :root { color-scheme: light dark; --accent: #2563eb; --muted: #6b7280; --line: #d1d5db; }
        * { box-sizing: border-box; }
        [hidden] { display: none !important; }
        body { margin: 0; font: 16px/1.5 system-ui, sans-serif; }
        main { padding: 1rem; max-width: 72rem; margin: 0 auto; }
        .skip { position: absolute; left: -999px; }
        .skip:focus { left: 1rem; top: 1rem; background: Canvas; padding: .5rem; z-index: 2; }
        .bar { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; justify-content: space-between;
            padding: .5rem 1rem; border-bottom: 1px solid var(--line); }
        .bar nav { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; }
        .brand { font-weight: 700; text-decoration: none; }
        .who { color: var(--muted); overflow-wrap: anywhere; }
        a { color: var(--accent); }
        a:focus-visible, button:focus-visible, input:focus-visible { outline: 3px solid var(--accent);
            outline-offset: 2px; }
        h1 { font-size: 1.5rem; overflow-wrap: anywhere; }
        .inline { display: inline; }
        button, .button { font: inherit; padding: .4rem .8rem; border: 1px solid var(--line); border-radius: .4rem;
            background: ButtonFace; color: ButtonText; text-decoration: none; cursor: pointer; min-height: 2.5rem;
            display: inline-block; }
        input { font: inherit; padding: .4rem; border: 1px solid var(--line); border-radius: .3rem; min-height: 2.5rem;
            max-width: 100%; }
        .stack { display: grid; gap: .4rem; max-width: 24rem; }
        .stack button { margin-top: .6rem; }
        .error { color: #b91c1c; font-weight: 600; }
        .notice { border: 1px solid var(--accent); border-radius: .4rem; padding: .5rem; overflow-wrap: anywhere; }
        select { font: inherit; padding: .35rem; min-height: 2.5rem; }
        .tools { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; margin-bottom: .5rem; }
        .filter { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; }
        .list { width: 100%; border-collapse: collapse; }
        .list th, .list td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line);
            overflow-wrap: anywhere; }
        .list .num { text-align: right; white-space: nowrap; }
        .count { color: var(--muted); }
        .kind { display: inline-block; width: .8em; height: 1em; margin-right: .45em; vertical-align: -.1em;
            border: 2px solid var(--muted); border-radius: 2px; }
        .folder .kind { width: 1.1em; height: .85em; border-color: #d97706; background: #fbbf24; }
        .link .kind { border-style: dashed; }
        .crumbs ol { list-style: none; padding: 0; margin: 0; display: flex; flex-wrap: wrap; }
        .crumbs li + li::before { content: "/"; padding: 0 .4rem; color: var(--muted); }
        .crumbs li { overflow-wrap: anywhere; }
        .pages { display: flex; gap: 1rem; margin-top: .8rem; }
        .facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
        .facts dd { margin: 0; }
        .preview { max-width: 100%; border: 1px solid var(--line); }
        pre.preview { padding: .5rem; overflow: auto; max-height: 70vh; white-space: pre-wrap;
            overflow-wrap: anywhere; }
        iframe.preview { width: 100%; height: 70vh; }
        .hidden { position: absolute; left: -999px; }
        .changes { margin: .8rem 0; display: grid; gap: .6rem; }
        .upload { border: 2px dashed var(--line); border-radius: .5rem; padding: .6rem; display: grid; gap: .4rem; }
        .upload.over { border-color: var(--accent); }
        .upload li.done { color: #15803d; }
        .upload li.failed { color: #b91c1c; }
        .danger { border-color: #b91c1c; color: #b91c1c; }
        details.changes summary { cursor: pointer; }
        @media (max-width: 40rem) {
            main { padding: .5rem; }
            .list th:nth-child(3), .list td:nth-child(3) { display: none; }
        }
        """

    static let script = WebScript.text
}
