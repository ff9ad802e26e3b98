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
          // HMAC with an empty key is HMAC with zeros (the key is padded): WebCrypto wants a key.
          const hmac = async (key, data) => {
            const k = await subtle.importKey("raw", key.length ? key : new Uint8Array(32),
              { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
            return new Uint8Array(await subtle.sign("HMAC", k, data));
          };
          const hkdf = async (ikm, salt, info, length) => {
            const k = await subtle.importKey("raw", ikm, "HKDF", false, ["deriveBits"]);
            return new Uint8Array(await subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt, info }, k, length * 8));
          };
          const gcmOpen = async (key, nonce, sealed, aad) => {
            const k = await subtle.importKey("raw", key, "AES-GCM", false, ["decrypt"]);
            return new Uint8Array(await subtle.decrypt({ name: "AES-GCM", iv: nonce, additionalData: aad }, k, sealed));
          };
          const pkcs8 = (oid, seed) => concat(new Uint8Array([0x30, 0x2e, 2, 1, 0, 0x30, 5, 6, 3, 0x2b, 0x65, oid, 4, 0x22, 4, 0x20]), seed);
          // A private key from its 32 bytes and the raw public key that goes with it.
          const privateKey = async (algorithm, oid, seed, usages) => {
            const key = await subtle.importKey("pkcs8", pkcs8(oid, seed), algorithm, true, usages);
            const pub = fromBase64URL((await subtle.exportKey("jwk", key)).x);
            return { key: await subtle.importKey("pkcs8", pkcs8(oid, seed), algorithm, false, usages), pub };
          };

          // HPKE (RFC 9180), base mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM: open only.
          const hpkeOpen = async (recipient, enc, info, sealed) => {
            const hpke = utf8.encode("HPKE-v1");
            const extract = (suite, salt, name, ikm) => hmac(salt, concat(hpke, suite, utf8.encode(name), ikm));
            const expand = async (suite, prk, name, context, length) =>
              (await hmac(prk, concat(u16(length), hpke, suite, utf8.encode(name), context, new Uint8Array([1]))))
                .subarray(0, length);
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
          const recoveryKeys = async (secret) => {
            const salt = label("recovery");
            const signing = await privateKey({ name: "Ed25519" }, 0x70, await hkdf(secret, salt, utf8.encode("signing"), 32), ["sign"]);
            const agreement = await privateKey({ name: "X25519" }, 0x6e, await hkdf(secret, salt, utf8.encode("agreement"), 32), ["deriveBits"]);
            return { signing: signing.pub, agreement };
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
            for (let i = 0; i < count; i++) {
              const id = hex(r.fixed(16)), digest = r.fixed(32), deleted = r.byte();
              if (deleted > 1) alarm("a ledger entry's change is malformed");
              e.changes.push({ id, digest, deleted: deleted === 1 });
            }
            e.body = bytes.subarray(0, r.at);
            e.signature = r.fixed(64);
            r.end();
            return e;
          };

          const keyring = (bytes) => {
            const r = new Reader(bytes, "a keyring");
            if (r.byte() !== VERSION) alarm("a keyring of another format version");
            const k = { container: r.fixed(16), recovery: { signing: r.fixed(32), agreement: r.fixed(32) }, members: [], epochs: [] };
            const members = r.u32();
            if (members > 1000) alarm("a keyring with too many members");
            for (let i = 0; i < members; i++) { k.members.push(r.fixed(32)); r.fixed(32); r.u64(); }
            const epochs = r.u32();
            if (epochs < 1 || epochs > 10000) alarm("a keyring's epochs are malformed");
            for (let number = 0; number < epochs; number++) {
              if (r.u32() !== number) alarm("a keyring's epochs are out of order");
              const wraps = new Map(), count = r.u32();
              if (count > 1001) alarm("a keyring's epoch is malformed");
              for (let i = 0; i < count; i++) wraps.set(hex(r.fixed(32)), r.fixed(80));
              k.epochs.push(wraps);
            }
            r.end();
            return k;
          };
          const isSigner = (ring, key) => same(ring.recovery.signing, key) || ring.members.some((m) => same(m, key));

          const record = (bytes) => {
            const inner = new Reader(bytes, "a record");
            const r = new Reader(inner.counted(bytes.length), "a record");
            if (inner.fixed(bytes.length - inner.at).some((b) => b !== 0)) alarm("a record's padding is not zeros");
            const s = { kind: r.byte(), mode: r.u32(), mtime: r.i64(), size: r.i64() };
            s.parent = r.byte() === 1 ? hex(r.fixed(16)) : null;
            s.name = new TextDecoder().decode(r.counted(255));
            s.target = r.byte() === 1 ? new TextDecoder().decode(r.counted(4096)) : null;
            const attributes = r.u32();
            for (let i = 0; i < attributes; i++) { r.counted(255); r.counted(65536); }
            const chunks = r.u32();
            if (chunks > (bytes.length - r.at) / 36) alarm("a record counts more chunks than it holds");
            s.chunks = [];
            for (let i = 0; i < chunks; i++) s.chunks.push({ hash: r.fixed(32), length: r.u32() });
            r.end();
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
