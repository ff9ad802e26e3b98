#!/usr/bin/env python3
"""Known-answer vectors of the sealed format (doc/CRYPTO.md), computed independently of the Swift
code with Python's `cryptography` package (Debian: python3-cryptography). The Swift tests
(Tests/SyncSealedTests/SealedVectorTests.swift) hold the values this prints; run it again after a
deliberate format change and update both.
"""
import hashlib
import hmac
import struct

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF, HKDFExpand

VERSION = 1


def label(purpose):
    return f"syncfs-sealed-v1 {purpose}".encode()


def counted(b):
    return struct.pack(">I", len(b)) + b


def hkdf(ikm, salt, info, length=32):
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(ikm)


SECRET = bytes(range(32))
CONTAINER = bytes(range(0xA0, 0xB0))
EPOCH = 3
NONCE = bytes(range(12))


def epoch_key(purpose):
    return hkdf(SECRET, label("keys"), purpose.encode() + CONTAINER + struct.pack(">I", EPOCH))


KEYS = {p: epoch_key(p) for p in ("record", "chunk", "chunk-id", "chunker")}


def envelope(kind, name, key, plaintext):
    aad = counted(label(kind)) + CONTAINER + bytes([VERSION]) + struct.pack(">I", EPOCH) + counted(name)
    sealed = AESGCM(key).encrypt(NONCE, plaintext, aad)  # ciphertext || tag
    return bytes([VERSION]) + struct.pack(">I", EPOCH) + NONCE + sealed


def padme(length):
    e = length.bit_length() - 1
    s = e.bit_length() - 1 + 1
    last = e - s
    if last <= 0:
        return length
    mask = (1 << last) - 1
    return (length + mask) & ~mask


def bucket(length):
    if length <= 4096:
        return max(512, (length + 511) // 512 * 512)
    return padme(length)


OVERHEAD = 1 + 4 + 12 + 16


def main():
    for purpose, key in KEYS.items():
        print(f"key {purpose}: {key.hex()}")
    plain = b"hello, sealed world"
    sha = hashlib.sha256(plain).digest()
    chunk_id = hmac.new(KEYS["chunk-id"], sha, hashlib.sha256).digest()
    print(f"chunk id of sha256('{plain.decode()}'): {chunk_id.hex()}")
    stored = bucket(OVERHEAD + 9 + len(plain))
    inner = bytes([0]) + struct.pack(">II", len(plain), len(plain)) + plain
    inner += bytes(stored - OVERHEAD - len(inner))
    chunk = envelope("chunk", chunk_id, KEYS["chunk"], inner)
    print(f"chunk envelope: {len(chunk)} bytes, sha256 {hashlib.sha256(chunk).hexdigest()}")

    # A record: a file named "notes.txt" under parent 0x11.., mode 0o644, one chunk.
    parent = bytes([0x11] * 16)
    file_id = bytes([0x22] * 16)
    record = bytes([1]) + struct.pack(">I", 0o644) + struct.pack(">q", 1_700_000_000_000_000_000)
    record += struct.pack(">q", len(plain)) + bytes([1]) + parent + counted(b"notes.txt") + bytes([0])
    record += struct.pack(">I", 1) + counted(b"user.color") + counted(b"blue")
    record += struct.pack(">I", 1) + sha + struct.pack(">I", len(plain))
    stored = bucket(OVERHEAD + 4 + len(record))
    inner = counted(record)
    inner += bytes(stored - OVERHEAD - len(inner))
    sealed_record = envelope("record", file_id, KEYS["record"], inner)
    print(f"record envelope: {len(sealed_record)} bytes, sha256 {hashlib.sha256(sealed_record).hexdigest()}")
    record_digest = hashlib.sha256(counted(label("record-digest")) + sealed_record).digest()
    print(f"record digest: {record_digest.hex()}")

    gear = HKDFExpand(algorithm=hashes.SHA256(), length=2048, info=b"gear").derive(KEYS["chunker"])
    print(f"gear[0] {struct.unpack('>Q', gear[0:8])[0]:016x} gear[255] {struct.unpack('>Q', gear[2040:2048])[0]:016x}")

    signer = Ed25519PrivateKey.from_private_bytes(bytes([0x33] * 32))
    signer_pub = signer.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    body = bytes([VERSION]) + CONTAINER + struct.pack(">Q", 2) + bytes([0x44] * 32) + struct.pack(">I", EPOCH)
    body += signer_pub + struct.pack(">q", 1_700_000_000_000) + counted(b"laptop") + struct.pack(">I", 1)
    body += file_id + record_digest + bytes([0])
    signature = signer.sign(counted(label("ledger")) + body)
    entry = body + signature
    print(f"ledger entry: {len(entry)} bytes, sha256 {hashlib.sha256(entry).hexdigest()}")
    print(f"ledger digest: {hashlib.sha256(counted(label('ledger-digest')) + entry).hexdigest()}")
    print(f"ledger id of 1: {hashlib.sha256(counted(label('ledger-id')) + struct.pack('>Q', 1)).digest()[:16].hex()}")
    print(f"keyring id of 1: {hashlib.sha256(counted(label('keyring-id')) + struct.pack('>Q', 1)).digest()[:16].hex()}")

    recovery = bytes([0x55] * 32)
    signing_seed = hkdf(recovery, label("recovery"), b"signing")
    pub = Ed25519PrivateKey.from_private_bytes(signing_seed).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    print(f"recovery signing key of 0x55..: {pub.hex()}")
    for length in (0, 1, 600, 4096, 4097, 5000, 1_000_000, 4 << 20):
        print(f"bucket({length}) = {bucket(length)}")


if __name__ == "__main__":
    main()
