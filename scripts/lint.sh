#!/usr/bin/env bash
# Style and project rules: swift format with the checked-in config, plus rules of the layering.
set -euo pipefail
cd "$(dirname "$0")/.."
swift format lint --strict -r Sources Tests Package.swift
fail=0
# Only the FUSE adapter imports CFuse.
if grep -rln "^import CFuse" Sources | grep -v "^Sources/SyncFS/FUSE/"; then
    echo "lint: CFuse may only be imported in Sources/SyncFS/FUSE/" >&2; fail=1
fi
# Only the credentials module talks to libargon2.
if grep -rln "^import CArgon2" Sources | grep -v "^Sources/SyncCredentials/"; then
    echo "lint: CArgon2 may only be imported in Sources/SyncCredentials/" >&2; fail=1
fi
# Only the SQLite wrapper talks to SQLite's C API; only the metadata store and containers use it.
if grep -rln "^import CSQLite" Sources | grep -v "^Sources/SQLiteSupport/"; then
    echo "lint: CSQLite may only be imported in Sources/SQLiteSupport/" >&2; fail=1
fi
if grep -rln "^import SQLiteSupport" Sources \
    | grep -v -e "^Sources/SyncFS/Metadata/" -e "^Sources/SyncBackend/" -e "^Sources/SyncServer/TokenStore" -e "^Sources/SyncServer/Access/EmbeddedAccessStore"; then
    echo "lint: SQLiteSupport may only be imported in Sources/SyncFS/Metadata/, Sources/SyncBackend/ and the server's TokenStore and EmbeddedAccessStore" >&2; fail=1
fi
# Only the server knows Hummingbird; only the HTTP client knows async-http-client.
if grep -rln "^import Hummingbird" Sources | grep -v "^Sources/SyncServer/"; then
    echo "lint: Hummingbird may only be imported in Sources/SyncServer/" >&2; fail=1
fi
if grep -rln "^import AsyncHTTPClient" Sources | grep -v -e "^Sources/SyncClient/" -e "^Sources/SyncS3/S3Transport.swift"; then
    echo "lint: AsyncHTTPClient may only be imported in Sources/SyncClient/ and the S3 transport" >&2; fail=1
fi
# Only the PostgreSQL store knows postgres-nio, and nothing but the server side may use the store.
if grep -rln "^import PostgresNIO" Sources | grep -v -e "^Sources/SyncPostgres/" -e "^Sources/SyncPostgresTesting/"; then
    echo "lint: PostgresNIO may only be imported in Sources/SyncPostgres/ (and its test double)" >&2; fail=1
fi
if grep -rln "^import SyncPostgres$" Sources \
    | grep -v -e "^Sources/SyncServer/" -e "^Sources/SyncServerPostgres/" -e "^Sources/syncfs-mount/" \
        -e "^Sources/SyncPostgresTesting/"; then
    echo "lint: SyncPostgres may only be imported by the server and the command" >&2; fail=1
fi
# SQL takes values as bound parameters only: raw SQL text is for the tests' scratch databases.
if grep -rn "pointee\.d_name" Sources | grep -v "///"; then
    echo "lint: read a dirent's name in place (d_reclen), never copy pointee.d_name (256 bytes past the buffer)" >&2; fail=1
fi
if grep -rn "unsafeSQL" Sources | grep -v "^Sources/SyncPostgresTesting/"; then
    echo "lint: PostgresQuery(unsafeSQL:) only in Sources/SyncPostgresTesting/; bind values instead" >&2; fail=1
fi
# SyncS3 builds on SyncBackend (S3ChunkBlobStore), never the reverse; mounts never talk to S3.
if grep -rln "^import SyncS3" Sources/SyncBackend Sources/SyncFS Sources/SyncClient Sources/SyncMerge; then
    echo "lint: SyncBackend, SyncFS, SyncClient and SyncMerge must not import SyncS3" >&2; fail=1
fi
# Core knows no container: the Sync layer and the daemon talk to SyncBackend's protocol.
if grep -rln "LocalContainer\|InMemoryContainer" Sources/SyncFS/Core Sources/SyncFS/FUSE; then
    echo "lint: Core and FUSE must not name a container implementation" >&2; fail=1
fi
# Inside SyncFS, a folder uses only the folders scripts/folder-order.py lets it (a graph without
# cycles); known exceptions are in scripts/folder-order-allowlist.txt, which only shrinks.
if ! python3 scripts/folder-order.py --self-test || ! python3 scripts/folder-order.py; then
    echo "lint: a file in Sources/SyncFS uses a type of a folder its own may not use (see above)" >&2; fail=1
fi
# SyncFS's public API is what the command lines use (the tests use @testable import).
if ! python3 scripts/public-api.py; then
    echo "lint: a public declaration of SyncFS that neither syncfs-mount nor syncfs-bench uses (see above)" >&2; fail=1
fi
# No silent try?: each one is listed with its reason (scripts/try-allowlist.txt, which only shrinks).
if ! python3 scripts/try-allowlist.py --self-test >/dev/null || ! python3 scripts/try-allowlist.py >/dev/null; then
    echo "lint: a try? in Sources that scripts/try-allowlist.txt does not list (handle the error or list it with a reason)" >&2; fail=1
fi
# No try! on request paths.
if grep -rn "try!" Sources/SyncFS Sources/SyncServer Sources/SyncServerPostgres Sources/SyncClient Sources/SyncS3 Sources/SyncPostgres; then
    echo "lint: no try! in the SyncFS, SyncServer, SyncClient, SyncS3 and SyncPostgres libraries" >&2; fail=1
fi
# Every exit status is one of ExitStatus (SyncBackend), never a bare number.
if grep -rnE "ExitCode\([0-9]|[^a-zA-Z_.]_?exit\([0-9]" Sources/syncfs-mount Sources/SyncServer Sources/SyncFS; then
    echo "lint: name an ExitStatus case instead of a bare exit code" >&2; fail=1
fi
# No test hook in the shipped command line (nor, through the mount helper, in fstab): an option is
# never named test…; tests give their hooks through the daemon's environment (doc/CLI.md).
if grep -rnE '^\s*(@(Option|Flag)[^)]*\)\s*)?(public\s+)?var test[A-Z_]|(customLong|customShort)\("test' \
    Sources/syncfs-mount; then
    echo "lint: no command-line option may be a test hook (named test…); read an environment variable in the daemon instead" >&2; fail=1
fi
# Test code lives in test targets only (doc/decisions/024-test-doubles-in-test-targets.md): the test
# doubles are in the Sync*Testing targets, which nothing outside them, Tests/ and syncfs-bench
# imports; no product folder holds a Testing/ folder or a file or type named as a test double (the
# daemon's one outage switch, OutageFileContainer, is an environment-gated hook, CLI.md "Test
# hooks"); and the benchmarks' commands are in syncfs-bench, not the shipped syncfs-mount.
if grep -rlnE "^(@testable )?import [A-Za-z]+Testing$" Sources \
    | grep -vE "^Sources/([A-Za-z]+Testing|syncfs-bench)/"; then
    echo "lint: a product target imports a *Testing target; test doubles are for Tests/ only" >&2; fail=1
fi
if find Sources -mindepth 2 -type d -name Testing | grep .; then
    echo "lint: no Testing/ folder inside a product target; put test doubles in a Sync*Testing target" >&2; fail=1
fi
doubles="FaultInjecting|Hostile|Fake|Mock|Stub|Spy|TestServer|Scratch"
if find Sources -name "*.swift" | grep -vE "^Sources/[A-Za-z]+Testing/" | grep -E "($doubles)[^/]*$"; then
    echo "lint: a file named as a test double in a product target; move it to a Sync*Testing target" >&2; fail=1
fi
if grep -rnE "^\s*(public |package )?(final )?(class|struct|enum|actor|protocol) [A-Za-z]*($doubles)" Sources \
    | grep -vE "^Sources/[A-Za-z]+Testing/"; then
    echo "lint: a type named as a test double in a product target; move it to a Sync*Testing target" >&2; fail=1
fi
if grep -rnE 'commandName: "(seed-synthetic|seed-container|measure-server|measure-pipeline)"' Sources/syncfs-mount; then
    echo "lint: benchmark commands belong in Sources/syncfs-bench, not the shipped syncfs-mount" >&2; fail=1
fi
# Tests wait on a condition with TestSupport's waitUntil/eventually, never with a fixed sleep
# before an assertion: every sleep left is part of a scenario and has its line in
# scripts/test-sleep-allowlist.txt ("path: reason", one per call), which only shrinks.
sleep_counts() { cut -d: -f1 | sort | uniq -c | awk '{ print $2 ": " $1 }'; }
found_sleeps=$(grep -rnE --include='*.swift' '(Thread|Task)\.sleep|\busleep\(|(^|[^.[:alnum:]_])sleep\(' Tests \
    | grep -vE 'func sleep\(' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' | sleep_counts)
allowed_sleeps=$(grep -vE '^[[:space:]]*(#|$)' scripts/test-sleep-allowlist.txt | sleep_counts)
if [ "$found_sleeps" != "$allowed_sleeps" ]; then
    diff <(echo "$allowed_sleeps") <(echo "$found_sleeps") | grep '^[<>]' | sed 's/^</listed:/; s/^>/found: /' >&2
    echo "lint: sleeps in Tests/ differ from scripts/test-sleep-allowlist.txt (calls per file, above): wait on the condition with waitUntil/eventually, or list a scenario's sleep with its reason (remove lines of sleeps that are gone)" >&2; fail=1
fi
# One wait and one temporary directory: Tests/TestSupport's, nowhere else.
if grep -rnE --include='*.swift' \
    'func (eventually|waitUntil)[[:space:]]*[(<]|mkdtemp\(|NSTemporaryDirectory\(|FileManager\.default\.temporaryDirectory' Tests \
    | grep -v '^Tests/TestSupport/'; then
    echo "lint: use TestSupport's waitUntil/eventually and makeTemporaryDirectory/TemporaryDirectory in tests" >&2; fail=1
fi
exit "$fail"
