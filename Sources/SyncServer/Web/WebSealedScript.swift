/// The script of a sealed container's page (`WebPages+Sealed.swift`): it opens the container in
/// the browser, with WebCrypto only, from the recovery key the user types, and shows its tree.
///
/// Contract:
/// - The key stays in this page's memory: it is read from a field with no `name` (never part of
///   a form's submission), the field is cleared at once, nothing is stored, and the only requests
///   are `GET`s of the sealed entries and of chunks by their keyed IDs. Folders are fragment
///   links (`#f=ID`), which the browser never sends.
/// - What is shown is checked as a device that joins with the recovery key checks it
///   (doc/CRYPTO.md): the genesis names this key's public halves and is signed by it; the ledger
///   runs from the genesis, each entry following the one before and signed by a member of the
///   keyring in force, each keyring the one its entry names; every live record is the one the
///   newest ledger entry naming it names, sealed under that entry's epoch; every chunk opens as
///   the content its ID names (SHA-256, then the keyed ID). Anything else shows an alarm and
///   nothing of the container.
/// - Names are text (`textContent`), never markup.
enum WebSealedScript {
    static let text = ["\"use strict\";\n(() => {", WebSealedFormat.text, opening, page, "})();\n"]
        .joined(separator: "\n")

    /// Opening: the ledger checked from the genesis, the epoch keys unwrapped, the records and
    /// the chunks opened and checked.
    private static let opening = #"""
          // -- Opening the container
          const open = async (place, text) => {
            const secret = await recoverySecret(text);
            if (!secret) throw new Error("That is not a recovery key: check it for a typo (it starts with SFR1-).");
            const recovery = await recoveryKeys(secret);
            const response = await fetch(place.dataset.entries, { credentials: "same-origin" });
            if (!response.ok) throw new Error("The server did not hand over the container (" + response.status + ").");
            const stored = new Map();
            for (const e of (await response.json()).entries) stored.set(e.id, { sealed: fromBase64(e.sealed), chunks: e.chunks });
            const ledger = await checkedLedger(stored, recovery);
            const keys = await epochKeys(ledger, recovery);
            const entries = await vouchedRecords(stored, ledger, keys);
            return { entries, children: tree(entries), keys, ledger, chunkPath: place.dataset.chunk };
          };

          // The ledger, from the genesis: each entry the next, following the one before, signed by a
          // member of the keyring in force, at its newest epoch; each keyring the one its entry names,
          // changed only as the rules allow. Returns the keyring in force, the head, and what each
          // entry names (the newest naming of each file ID).
          const checkedLedger = async (stored, recovery) => {
            let ring = null, previous = new Uint8Array(32), container = null, head = 0;
            const named = new Map(), format = new Set();
            for (let sequence = 1; ; sequence++) {
              const ledgerID = await reservedID("ledger-id", u64(sequence));
              const found = stored.get(ledgerID);
              if (!found) break;
              format.add(ledgerID);
              const entry = ledgerEntry(found.sealed);
              if (entry.sequence !== BigInt(sequence)) alarm("ledger entry " + sequence + " is stored out of place");
              if (!same(entry.previous, previous)) alarm("ledger entry " + sequence + " does not follow the one before (a fork)");
              if (container && !same(entry.container, container)) alarm("ledger entry " + sequence + " is another container's");
              const ringID = await reservedID("keyring-id", u64(sequence));
              const change = entry.changes.find((c) => c.id === ringID);
              let published = null;
              if (change) {
                const ringEntry = stored.get(ringID);
                if (!ringEntry || change.deleted || !same(await digestOf(ringEntry.sealed, "record-digest"), change.digest)) {
                  alarm("the keyring ledger entry " + sequence + " names is missing or changed");
                }
                published = keyring(ringEntry.sealed);
                format.add(ringID);
                const problem = ring ? keyringProblem(ring, published, sequence)
                  : published.members.every((m) => m.addedIn === 1n) ? null : "its first keyring adds members in other entries";
                if (problem) alarm("ledger entry " + sequence + ": " + problem);
              } else if (sequence === 1) {
                alarm("the genesis publishes no keyring");
              }
              if (sequence === 1) {
                if (!same(published.recovery.signing, recovery.signing) || !same(published.recovery.agreement, recovery.agreement.pub)) {
                  throw new Error("This recovery key is not this container's.");
                }
                if (!same(entry.signer, recovery.signing)) alarm("the genesis is not signed by the recovery key");
              }
              if (!signerIn(sequence === 1 ? published : ring, entry.signer)) alarm("ledger entry " + sequence + " is not signed by a member");
              const key = await subtle.importKey("raw", entry.signer, { name: "Ed25519" }, false, ["verify"]);
              if (!(await subtle.verify({ name: "Ed25519" }, key, entry.signature, concat(counted(label("ledger")), entry.body)))) {
                alarm("ledger entry " + sequence + "'s signature does not check out");
              }
              ring = published || ring;
              if (entry.epoch !== ring.epochs.length - 1 || !same(ring.container, entry.container)) {
                alarm("ledger entry " + sequence + "'s epoch or container differs from its keyring's");
              }
              container = entry.container;
              previous = await digestOf(found.sealed, "ledger-digest");
              head = sequence;
              for (const c of entry.changes) named.set(c.id, { digest: c.digest, deleted: c.deleted, epoch: entry.epoch });
            }
            if (!ring) throw new Error("The server shows no ledger for this container.");
            // Nothing stored may go unnamed but a request to join (outside the ledger): a ledger entry
            // stored past a gap, or a record no entry names, means the server left something out.
            for (const [id, found] of stored) {
              if (format.has(id) || named.has(id)) continue;
              const bytes = found.sealed;
              if (bytes.length > 65 && bytes[0] === VERSION && id === await reservedID("join-id", bytes.subarray(1, 33))) continue;
              alarm("the server stores entry " + id + " that no ledger entry it shows names (a ledger entry withheld?)");
            }
            return { ring, head, headDigest: previous, container, named, format };
          };

          // Every epoch's keys, from the secrets wrapped to the recovery key; not extractable.
          const epochKeys = async (ledger, recovery) => {
            const keys = new Map();
            keys.container = ledger.container;
            const recipient = hex(recovery.signing);
            for (let epoch = 0; epoch < ledger.ring.epochs.length; epoch++) {
              const wrapped = ledger.ring.epochs[epoch].get(recipient);
              if (!wrapped) alarm("epoch " + epoch + " is not wrapped to the recovery key");
              const bytes = hexBytes(wrapped);
              const info = concat(counted(label("epoch-wrap")), ledger.container, u32(epoch), recovery.signing);
              let epochSecret;
              try {
                epochSecret = await hpkeOpen(recovery.agreement, bytes.subarray(0, 32), info, bytes.subarray(32));
              } catch {
                alarm("epoch " + epoch + "'s secret does not open with the recovery key");
              }
              if (epochSecret.length !== 32) alarm("epoch " + epoch + "'s secret is malformed");
              const derive = (purpose) => hkdf(epochSecret, label("keys"), concat(utf8.encode(purpose), ledger.container, u32(epoch)), 32);
              keys.set(epoch, {
                record: await aesKey(await derive("record")), chunk: await aesKey(await derive("chunk")),
                chunkID: await hmacKey(await derive("chunk-id")),
              });
            }
            return keys;
          };

          // The records the ledger vouches for, opened: each the one the newest ledger entry naming
          // it names (live as it says), sealed under that entry's epoch. Nothing else is shown.
          const vouchedRecords = async (stored, ledger, keys) => {
            const entries = new Map();
            const root = "0".repeat(32);
            for (const [id, naming] of ledger.named) {
              if (ledger.format.has(id)) continue;
              const found = stored.get(id);
              if (naming.deleted) {
                if (found) alarm("entry " + id + " is live on the server but deleted in the ledger");
                continue;
              }
              if (!found || !same(await digestOf(found.sealed, "record-digest"), naming.digest)) {
                alarm("the server withholds or changed entry " + id + " that the ledger names");
              }
              const opened = await openEnvelope(found.sealed, "record", hexBytes(id), keys, "record");
              if (opened.epoch !== naming.epoch) alarm("entry " + id + " is sealed under another epoch than its ledger entry's");
              entries.set(id, { id, ...record(opened.plain, id === root), stored: found.chunks, epoch: opened.epoch });
            }
            // The root is implicit until a commit changes it (its attributes, its mode).
            if (!entries.has(root)) entries.set(root, { id: root, kind: 2, parent: null, name: "", chunks: [] });
            return entries;
          };

          // Each folder's entries; every entry's folders lead to the root, without a cycle.
          const tree = (entries) => {
            const children = new Map();
            for (const e of entries.values()) {
              if (e.parent === null) continue;
              const parent = entries.get(e.parent);
              if (!parent || parent.kind !== 2) alarm("entry " + e.id + " is in a folder the ledger does not name");
              if (!children.has(e.parent)) children.set(e.parent, []);
              children.get(e.parent).push(e);
            }
            const reaches = new Set(["0".repeat(32)]);
            for (const e of entries.values()) {
              const path = [];
              let at = e;
              while (!reaches.has(at.id)) {
                if (path.length > entries.size) alarm("the folders of entry " + e.id + " form a cycle");
                path.push(at.id);
                at = entries.get(at.parent);
              }
              for (const id of path) reaches.add(id);
            }
            return children;
          };
          const hexBytes = (text) => Uint8Array.from(text.match(/../g), (h) => parseInt(h, 16));

          // -- A file's content: each chunk fetched by its keyed ID, opened and checked.
          const inflate = async (bytes) => {
            const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
            return new Uint8Array(await new Response(stream).arrayBuffer());
          };
          const chunk = async (opened, file, piece) => {
            const order = [file.epoch, ...[...opened.keys.keys()].filter((e) => e !== file.epoch).sort((a, b) => b - a)];
            for (const epoch of order) {
              const id = await hmac(opened.keys.get(epoch).chunkID, piece.hash);
              if (!file.stored.includes(hex(id))) continue;
              const response = await fetch(opened.chunkPath + "?id=" + hex(id), { credentials: "same-origin" });
              if (!response.ok) throw new Error("The server did not hand over a piece of the file (" + response.status + ").");
              const envelope = new Uint8Array(await response.arrayBuffer());
              const { plain, epoch: sealedUnder } = await openEnvelope(envelope, "chunk", id, opened.keys, "chunk");
              if (sealedUnder !== epoch) alarm("a chunk is sealed under another epoch than its ID's");
              const r = new Reader(plain, "a chunk");
              const encoding = r.byte(), length = r.u32(), payload = r.fixed(r.u32());
              if (r.fixed(plain.length - r.at).some((b) => b !== 0)) alarm("a chunk's padding is not zeros");
              let content;
              if (encoding === 0) content = payload;
              else if (encoding === 1) content = await inflate(payload).catch(() => alarm("a chunk does not decompress"));
              else alarm("a chunk of an unknown encoding");
              if (content.length !== length || length !== piece.length || !same(await sha256(content), piece.hash)) {
                alarm("a chunk is not the content its ID names");
              }
              return content;
            }
            alarm("the server's copy of " + file.name + " does not list a piece of it");
          };

        """#

    /// The page: the tree shown as text, downloads, the key field.
    private static let page = #"""
          // -- Showing the tree
          // Sizes and times as the rest of the page writes them (`WebFormat`): decimal units, UTC.
          const size = (bytes) => {
            let value = Number(bytes);
            if (value < 1000) return value + " B";
            const units = ["kB", "MB", "GB", "TB", "PB", "EB"];
            let unit = 0;
            value /= 1000;
            while (value >= 999.95 && unit < units.length - 1) { value /= 1000; unit++; }
            return value.toFixed(1) + " " + units[unit];
          };
          const time = (nanoseconds) => {
            const iso = new Date(Number(nanoseconds / 1000000n)).toISOString();
            return iso.slice(0, 10) + " " + iso.slice(11, 16) + " UTC";
          };
          const element = (tag, text, attributes = {}) => {
            const e = document.createElement(tag);
            if (text !== undefined) e.textContent = text;
            for (const [k, v] of Object.entries(attributes)) e.setAttribute(k, v);
            return e;
          };

          const show = (opened, ui) => {
            const wanted = new URLSearchParams(location.hash.slice(1)).get("f");
            const folder = opened.entries.get(wanted) && opened.entries.get(wanted).kind === 2 ? wanted : "0".repeat(32);
            ui.crumbs.replaceChildren();
            const trail = [];
            for (let at = opened.entries.get(folder); at; at = at.parent === null ? null : opened.entries.get(at.parent)) trail.unshift(at);
            const home = element("li");
            home.append(element("a", "Containers", { href: "/" }));
            ui.crumbs.append(home);
            trail.forEach((at, i) => {
              const li = element("li");
              const name = at.parent === null ? ui.container : at.name;
              li.append(i === trail.length - 1 ? element("span", name, { "aria-current": "page" }) : element("a", name, { href: "#f=" + at.id }));
              ui.crumbs.append(li);
            });
            ui.heading.textContent = folder === "0".repeat(32) ? ui.container : opened.entries.get(folder).name;
            const rows = (opened.children.get(folder) || []).slice().sort((a, b) =>
              (a.kind === 2) !== (b.kind === 2) ? (a.kind === 2 ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
            ui.body.replaceChildren();
            for (const e of rows) {
              const tr = element("tr", undefined, { class: e.kind === 2 ? "folder" : e.kind === 3 ? "link" : "file" });
              const cell = element("td");
              cell.append(element("span", undefined, { class: "kind", "aria-hidden": "true" }));
              if (e.kind === 2) {
                cell.append(element("a", e.name, { href: "#f=" + e.id }));
              } else if (e.kind === 1) {
                const button = element("button", e.name, { type: "button", class: "download", title: "Download " + e.name });
                button.addEventListener("click", () => download(opened, e, ui));
                cell.append(button);
              } else {
                cell.append(element("span", e.name + " → " + (e.target || "")));
              }
              tr.append(cell, element("td", e.kind === 2 ? "—" : size(e.size), { class: "num" }),
                element("td", time(e.mtime)));
              ui.body.append(tr);
            }
            ui.summary.textContent = rows.length === 1 ? "1 entry" : rows.length + " entries";
            ui.summary.hidden = false;
            ui.list.hidden = false;
          };

          const download = async (opened, file, ui) => {
            ui.status.textContent = "Opening " + file.name + " …";
            try {
              const parts = [];
              for (const piece of file.chunks) parts.push(await chunk(opened, file, piece));
              const url = URL.createObjectURL(new Blob(parts, { type: "application/octet-stream" }));
              const a = element("a", undefined, { href: url, download: file.name });
              document.body.append(a);
              a.click();
              a.remove();
              setTimeout(() => URL.revokeObjectURL(url), 60000);
              ui.status.textContent = "Opened " + file.name + " (" + size(file.size) + ").";
            } catch (error) {
              fail(ui, error);
            }
          };

          const fail = (ui, error) => {
            ui.list.hidden = true;
            ui.summary.hidden = true;
            ui.error.hidden = false;
            ui.error.textContent = error instanceof Alarm
              ? "The server's copy of this container does not check out (" + error.message + "): nothing of it is shown."
              : error.message || String(error);
          };

          document.addEventListener("DOMContentLoaded", () => {
            const place = document.getElementById("sealed");
            if (!place) return;
            const ui = {
              container: place.dataset.container, crumbs: document.getElementById("sealed-crumbs"),
              heading: document.getElementById("sealed-heading"), list: document.getElementById("sealed-list"),
              body: document.querySelector("#sealed-list tbody"), summary: document.getElementById("sealed-summary"),
              error: document.getElementById("sealed-error"), status: document.getElementById("sealed-status"),
            };
            const form = document.getElementById("sealed-open");
            const field = document.getElementById("recovery-key");
            form.addEventListener("submit", async (event) => {
              event.preventDefault();
              const text = field.value;
              field.value = "";
              ui.error.hidden = true;
              ui.status.textContent = "Opening the container in this browser …";
              try {
                const opened = await open(place, text);
                form.hidden = true;
                document.getElementById("sealed-notice").hidden = true;
                const epochs = opened.keys.size === 1 ? "1 key epoch" : opened.keys.size + " key epochs";
                const members = opened.ledger.ring.members.length;
                // As `status` on a device shows the head: compare them to see the same container.
                ui.status.textContent = "Opened in this browser: " + opened.entries.size + " entries checked, " + epochs
                  + "; ledger entry " + opened.ledger.head + " (" + hex(opened.ledger.headDigest.subarray(0, 8)) + "), "
                  + members + " member device(s).";
                show(opened, ui);
                window.addEventListener("hashchange", () => show(opened, ui));
              } catch (error) {
                ui.status.textContent = "";
                fail(ui, error);
              }
            });
          });
        """#
}
