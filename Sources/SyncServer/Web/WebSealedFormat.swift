/// The sealed format in the browser's script (`WebSealedScript`): bytes, the WebCrypto primitives
/// (SHA-256, HMAC, HKDF, AES-256-GCM, X25519 and Ed25519, HPKE's open built from them as RFC 9180
/// says), the recovery key's text, and the parsers of ledger entries, keyrings and records
/// (doc/CRYPTO.md). A parser reads every field in order and raises an `Alarm` for anything that
/// is not exactly the format.
enum WebSealedFormat {
    static let text = #"""
          const subtle = crypto.subtle;
          const utf8 = new TextEncoder();
          const EMPTY = new Uint8Array(0);
          const VERSION = 1;

          // -- Bytes
          const concat = (...parts) => {
            const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
            let at = 0;
            for (const p of parts) { out.set(p, at); at += p.length; }
            return out;
          };
          const u16 = (v) => new Uint8Array([v >> 8, v & 255]);
          const u32 = (v) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, v); return b; };
          const u64 = (v) => { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, BigInt(v)); return b; };
          const counted = (b) => concat(u32(b.length), b);
          const label = (purpose) => utf8.encode("syncfs-sealed-v1 " + purpose);
          const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
          const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
          // Whether byte string `a` sorts strictly before `b` (as Swift's lexicographicallyPrecedes).
          const before = (a, b) => {
            for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] < b[i];
            return a.length < b.length;
          };
          const fromBase64 = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
          const fromBase64URL = (text) => fromBase64(text.replace(/-/g, "+").replace(/_/g, "/") + "==".slice(0, (4 - text.length % 4) % 4));

          class Alarm extends Error {}
          const alarm = (why) => { throw new Alarm(why); };

          // Reads the format's fields in order; any read past the end is an alarm.
          class Reader {
            constructor(bytes, what) { this.bytes = bytes; this.at = 0; this.what = what; this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength); }
            need(n) { if (this.at + n > this.bytes.length) alarm(this.what + " ends too soon"); }
            byte() { this.need(1); return this.bytes[this.at++]; }
            u32() { this.need(4); const v = this.view.getUint32(this.at); this.at += 4; return v; }
            u64() { this.need(8); const v = this.view.getBigUint64(this.at); this.at += 8; return v; }
            i64() { this.need(8); const v = this.view.getBigInt64(this.at); this.at += 8; return v; }
            fixed(n) { this.need(n); const v = this.bytes.subarray(this.at, this.at + n); this.at += n; return v; }
            counted(limit) { const n = this.u32(); if (n > limit) alarm(this.what + " holds a field too long"); return this.fixed(n); }
            end() { if (this.at !== this.bytes.length) alarm(this.what + " has bytes after its end"); }
          }

          // -- Primitives (WebCrypto only)
          const sha256 = async (b) => new Uint8Array(await subtle.digest("SHA-256", b));
          // Keys are imported once, not extractable. HMAC with an empty key is HMAC with 32 zero
          // bytes (the key is padded with zeros): WebCrypto refuses an empty one.
          const hmacKey = (raw) => subtle.importKey("raw", raw.length ? raw : new Uint8Array(32),
            { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
          const aesKey = (raw) => subtle.importKey("raw", raw, "AES-GCM", false, ["decrypt"]);
          const hmac = async (key, data) =>
            new Uint8Array(await subtle.sign("HMAC", key instanceof CryptoKey ? key : await hmacKey(key), data));
          const hkdf = async (ikm, salt, info, length) => {
            const k = await subtle.importKey("raw", ikm, "HKDF", false, ["deriveBits"]);
            return new Uint8Array(await subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt, info }, k, length * 8));
          };
          const gcmOpen = async (key, nonce, sealed, aad) => new Uint8Array(await subtle.decrypt(
            { name: "AES-GCM", iv: nonce, additionalData: aad }, key instanceof CryptoKey ? key : await aesKey(key), sealed));
          const pkcs8 = (oid, seed) => concat(new Uint8Array([0x30, 0x2e, 2, 1, 0, 0x30, 5, 6, 3, 0x2b, 0x65, oid, 4, 0x22, 4, 0x20]), seed);
          // The raw public key of a private key's 32 bytes; the private key is not kept.
          const publicHalf = async (algorithm, oid, seed, usages) => {
            const key = await subtle.importKey("pkcs8", pkcs8(oid, seed), algorithm, true, usages);
            return fromBase64URL((await subtle.exportKey("jwk", key)).x);
          };

          // HPKE (RFC 9180), base mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM: open only.
          const hpkeOpen = async (recipient, enc, info, sealed) => {
            const hpke = utf8.encode("HPKE-v1");
            const extract = (suite, salt, name, ikm) => hmac(salt, concat(hpke, suite, utf8.encode(name), ikm));
            // One block of HKDF-Expand: every length asked for here is at most 32.
            const expand = async (suite, prk, name, context, length) => {
              if (length > 32) throw new Error("HKDF-Expand of more than one block");
              return (await hmac(prk, concat(u16(length), hpke, suite, utf8.encode(name), context, new Uint8Array([1]))))
                .subarray(0, length);
            };
            const kem = concat(utf8.encode("KEM"), u16(0x20));
            const suite = concat(utf8.encode("HPKE"), u16(0x20), u16(1), u16(2));
            const ephemeral = await subtle.importKey("raw", enc, { name: "X25519" }, false, []);
            const dh = new Uint8Array(await subtle.deriveBits({ name: "X25519", public: ephemeral }, recipient.key, 256));
            const eae = await extract(kem, EMPTY, "eae_prk", dh);
            const shared = await expand(kem, eae, "shared_secret", concat(enc, recipient.pub), 32);
            const context = concat(new Uint8Array([0]), await extract(suite, EMPTY, "psk_id_hash", EMPTY),
              await extract(suite, EMPTY, "info_hash", info));
            const secret = await extract(suite, shared, "secret", EMPTY);
            return gcmOpen(await expand(suite, secret, "key", context, 32),
              await expand(suite, secret, "base_nonce", context, 12), sealed, EMPTY);
          };

          // -- The recovery key: `SFR1-`, base32 of 32 bytes and a 2-byte SHA-256 checksum.
          const recoverySecret = async (text) => {
            let body = text.toUpperCase().replace(/[\s-]/g, "");
            if (!body.startsWith("SFR1")) return null;
            body = body.slice(4);
            const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
            const out = [];
            let buffer = 0, bits = 0;
            for (const c of body) {
              const value = alphabet.indexOf(c);
              if (value < 0) return null;
              buffer = ((buffer << 5) | value) & 0xfff;
              bits += 5;
              if (bits >= 8) { out.push((buffer >> (bits - 8)) & 255); bits -= 8; }
            }
            if ((buffer & ((1 << bits) - 1)) !== 0 || out.length !== 34) return null;
            const bytes = new Uint8Array(out);
            const secret = bytes.slice(0, 32);
            return same((await sha256(secret)).subarray(0, 2), bytes.subarray(32)) ? secret : null;
          };
          // The recovery "device": its signing key's public half (to find it in the keyring and check
          // the genesis's signature) and its agreement key (to open the epoch secrets wrapped to it).
          const recoveryKeys = async (secret) => {
            const salt = label("recovery");
            const signingSeed = await hkdf(secret, salt, utf8.encode("signing"), 32);
            const agreementSeed = await hkdf(secret, salt, utf8.encode("agreement"), 32);
            return {
              signing: await publicHalf({ name: "Ed25519" }, 0x70, signingSeed, ["sign"]),
              agreement: {
                key: await subtle.importKey("pkcs8", pkcs8(0x6e, agreementSeed), { name: "X25519" }, false, ["deriveBits"]),
                pub: await publicHalf({ name: "X25519" }, 0x6e, agreementSeed, ["deriveBits"]),
              },
            };
          };

          // -- The format (doc/CRYPTO.md)
          const reservedID = async (purpose, suffix) => hex((await sha256(concat(counted(label(purpose)), suffix))).subarray(0, 16));
          const digestOf = async (sealed, purpose) => sha256(concat(counted(label(purpose)), sealed));

          const ledgerEntry = (bytes) => {
            const r = new Reader(bytes, "a ledger entry");
            if (r.byte() !== VERSION) alarm("a ledger entry of another format version");
            const e = { container: r.fixed(16), sequence: r.u64(), previous: r.fixed(32), epoch: r.u32(),
              signer: r.fixed(32), time: r.i64() };
            r.counted(256);
            const count = r.u32();
            if (count > (bytes.length - r.at) / 49) alarm("a ledger entry counts more changes than it holds");
            e.changes = [];
            const ids = new Set();
            for (let i = 0; i < count; i++) {
              const id = hex(r.fixed(16)), digest = r.fixed(32), deleted = r.byte();
              if (deleted > 1 || ids.has(id)) alarm("a ledger entry's change is malformed or named twice");
              ids.add(id);
              e.changes.push({ id, digest, deleted: deleted === 1 });
            }
            e.body = bytes.subarray(0, r.at);
            e.signature = r.fixed(64);
            r.end();
            return e;
          };

          // Members and each epoch's wraps in strictly ascending order of signing key, as written.
          const keyring = (bytes) => {
            const r = new Reader(bytes, "a keyring");
            if (r.byte() !== VERSION) alarm("a keyring of another format version");
            const k = { container: r.fixed(16), recovery: { signing: r.fixed(32), agreement: r.fixed(32) }, members: [], epochs: [] };
            const members = r.u32();
            if (members > 1000) alarm("a keyring with too many members");
            for (let i = 0; i < members; i++) {
              const member = { signing: r.fixed(32), agreement: r.fixed(32), addedIn: r.u64() };
              if (i > 0 && !before(k.members[i - 1].signing, member.signing)) alarm("a keyring's members are out of order");
              k.members.push(member);
            }
            const epochs = r.u32();
            if (epochs < 1 || epochs > 10000) alarm("a keyring's epochs are malformed");
            for (let number = 0; number < epochs; number++) {
              if (r.u32() !== number) alarm("a keyring's epochs are out of order");
              const wraps = new Map(), count = r.u32();
              if (count > 1001) alarm("a keyring's epoch is malformed");
              let previous = null;
              for (let i = 0; i < count; i++) {
                const recipient = r.fixed(32);
                if (previous && !before(previous, recipient)) alarm("a keyring's wrapped secrets are out of order");
                previous = recipient;
                wraps.set(hex(recipient), hex(r.fixed(80)));
              }
              k.epochs.push(wraps);
            }
            r.end();
            return k;
          };
          const signerIn = (ring, key) => same(ring.recovery.signing, key) || ring.members.some((m) => same(m.signing, key));

          // How a keyring may change from one ledger entry to the next (Swift's KeyringRules): the
          // same container and recovery key; epochs only added, one at a time, each old wrap kept;
          // members' keys and entries kept; a member added in this entry only; a member removed only
          // with a new epoch not wrapped to it.
          const keyringProblem = (old, now, sequence) => {
            if (!same(now.container, old.container)) return "its keyring names another container";
            if (!same(now.recovery.signing, old.recovery.signing) || !same(now.recovery.agreement, old.recovery.agreement)) {
              return "its keyring changes the recovery key";
            }
            if (now.epochs.length !== old.epochs.length && now.epochs.length !== old.epochs.length + 1) {
              return "its keyring adds or drops several epochs";
            }
            for (let e = 0; e < old.epochs.length; e++) {
              for (const [recipient, wrapped] of old.epochs[e]) {
                if (now.epochs[e].get(recipient) !== wrapped) return "its keyring changes epoch " + e + "'s secret for a device";
              }
            }
            const staying = new Map(now.members.map((m) => [hex(m.signing), m]));
            const removed = old.members.filter((m) => !staying.has(hex(m.signing)));
            for (const member of old.members) {
              const kept = staying.get(hex(member.signing));
              if (!kept) continue;
              if (!same(kept.agreement, member.agreement)) return "its keyring changes a member's keys";
              if (kept.addedIn !== member.addedIn) return "its keyring changes when a member was added";
            }
            const known = new Set(old.members.map((m) => hex(m.signing)));
            for (const member of now.members) {
              if (!known.has(hex(member.signing)) && member.addedIn !== BigInt(sequence)) {
                return "its keyring adds a member in another entry than itself";
              }
            }
            if (removed.length > 0) {
              const newest = now.epochs[now.epochs.length - 1];
              if (now.epochs.length !== old.epochs.length + 1 || removed.some((m) => newest.has(hex(m.signing)))) {
                return "its keyring removes a member without a new epoch kept from it";
              }
            }
            return null;
          };

          // A record's state, checked as Swift's RecordEncoding and EntryStateRules check it.
          const MAX_CHUNK = 16 << 20;
          const record = (bytes, isRoot) => {
            const inner = new Reader(bytes, "a record");
            const r = new Reader(inner.counted(bytes.length), "a record");
            if (inner.fixed(bytes.length - inner.at).some((b) => b !== 0)) alarm("a record's padding is not zeros");
            const flag = () => { const b = r.byte(); if (b > 1) alarm("a record's flag is neither 0 nor 1"); return b === 1; };
            const s = { kind: r.byte(), mode: r.u32(), mtime: r.i64(), size: r.i64() };
            if (s.kind < 1 || s.kind > 3) alarm("a record of an unknown kind");
            if (s.mode > 0o7777) alarm("a record's mode is out of range");
            s.parent = flag() ? hex(r.fixed(16)) : null;
            const name = r.counted(255);
            s.name = new TextDecoder().decode(name);
            const target = flag() ? r.counted(4096) : null;
            s.target = target && new TextDecoder().decode(target);
            const attributes = r.u32();
            if (attributes > 65536) alarm("a record holds too many attributes");
            let previous = null;
            for (let i = 0; i < attributes; i++) {
              const attribute = r.counted(255);
              if (previous && !before(previous, attribute)) alarm("a record's attributes are out of order");
              previous = attribute;
              r.counted(65536);
            }
            const chunks = r.u32();
            if (chunks > (r.bytes.length - r.at) / 36) alarm("a record counts more chunks than it holds");
            s.chunks = [];
            let total = 0n;
            for (let i = 0; i < chunks; i++) {
              const piece = { hash: r.fixed(32), length: r.u32() };
              if (piece.length < 1 || piece.length > MAX_CHUNK) alarm("a record's chunk has a length out of range");
              total += BigInt(piece.length);
              s.chunks.push(piece);
            }
            r.end();
            if (isRoot) {
              if (s.parent !== null || name.length !== 0 || s.kind !== 2) alarm("the root is not a folder");
            } else if (s.parent === null || name.length < 1 || name.includes(0x2f) || name.includes(0)
              || same(name, [0x2e]) || same(name, [0x2e, 0x2e])) {
              alarm("a record names no folder or has a name an entry cannot have");
            }
            if (s.kind === 1 ? target !== null || total !== s.size : chunks !== 0 || s.size !== 0n) {
              alarm("a record's size, manifest or kind do not agree");
            }
            if ((s.kind === 3) !== (target !== null) || (target && (target.length < 1 || target.includes(0)))) {
              alarm("a record's symbolic link target is malformed");
            }
            return s;
          };

          // An envelope: version ‖ epoch ‖ nonce ‖ ciphertext ‖ tag, its associated data naming the object.
          const openEnvelope = async (envelope, kind, name, keys, key) => {
            if (envelope.length < 33 || envelope[0] !== VERSION) alarm("a sealed " + kind + " of another format version");
            const epoch = new DataView(envelope.buffer, envelope.byteOffset).getUint32(1);
            const ring = keys.get(epoch);
            if (!ring) alarm("a " + kind + " sealed under an epoch this key does not hold");
            const aad = concat(counted(label(kind)), keys.container, new Uint8Array([VERSION]), u32(epoch), counted(name));
            try {
              return { epoch, plain: await gcmOpen(ring[key], envelope.subarray(5, 17), envelope.subarray(17), aad) };
            } catch {
              alarm("a " + kind + " does not open with its key: the server changed it");
            }
          };

        """#
}
