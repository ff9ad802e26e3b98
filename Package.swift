// swift-tools-version: 6.2
import PackageDescription

/// Every target of ours builds with warnings as errors; dependencies keep their own settings.
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

let package = Package(
    name: "SyncFS",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "syncfs-mount", targets: ["syncfs-mount"]),
        .library(name: "SyncFS", targets: ["SyncFS"]),
        .library(name: "SyncBackend", targets: ["SyncBackend"]),
        .library(name: "SyncServer", targets: ["SyncServer"]),
        .library(name: "SyncClient", targets: ["SyncClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        // The sync server (#6). Hummingbird's optional swift-configuration support is left out.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // The server's connection guard sees HTTP parts as Hummingbird's pipeline has them (#12).
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // The web page's templates (HTML-escaped by default).
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        // A container's entries, versions and change feed in PostgreSQL (#16).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // Counters and histograms of the server and the mount, exported as Prometheus text.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        .systemLibrary(
            name: "CFuse",
            pkgConfig: "fuse3",
            providers: [.apt(["libfuse3-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        .systemLibrary(
            name: "CArgon2",
            pkgConfig: "libargon2",
            providers: [.apt(["libargon2-dev"])]
        ),
        .target(
            name: "SQLiteSupport",
            dependencies: ["CSQLite"],
            swiftSettings: strict
        ),
        .target(
            name: "SyncBackend",
            dependencies: [
                "CZlib", "SQLiteSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // Sealed (end-to-end encrypted) containers: keys, formats and the ledger.
        .target(
            name: "SyncSealed",
            dependencies: ["SyncBackend", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        // Password hashing (Argon2id) and TOTP for the server's accounts.
        .target(
            name: "SyncCredentials",
            dependencies: ["CArgon2", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        .target(
            name: "SyncServer",
            dependencies: [
                "SyncBackend", "SQLiteSupport", "SyncCredentials", "SyncSealed", "CZlib",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "SyncClient",
            dependencies: [
                "SyncBackend",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        // A small S3 client with AWS Signature V4 and the chunk blob store on it (#16).
        .target(
            name: "SyncS3",
            dependencies: [
                "SyncBackend",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // A container whose entries, versions and change feed live in PostgreSQL (#16).
        .target(
            name: "SyncPostgres",
            dependencies: [
                "SyncBackend",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "SyncServerPostgres",
            dependencies: ["SyncServer", "SyncPostgres", "SyncBackend"],
            swiftSettings: strict
        ),
        .target(
            name: "SyncMerge",
            swiftSettings: strict
        ),
        .target(
            name: "SyncFS",
            dependencies: [
                "CFuse", "SQLiteSupport", "SyncBackend", "SyncMerge",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // The metrics listener (Prometheus text at /metrics) and the JSON log format, shared by
        // `serve` and `mount`.
        .target(
            name: "SyncObservability",
            dependencies: [
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "syncfs-mount",
            dependencies: [
                "SyncFS", "SyncBackend", "SyncServer", "SyncClient", "SyncPostgres", "SyncS3", "SyncServerPostgres",
                "SyncSealed", "SyncObservability",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The benchmarks' commands (scripts/bench): seeding containers and measuring without a
        // mount. Not installed; the shipped command is syncfs-mount.
        .executableTarget(
            name: "syncfs-bench",
            dependencies: [
                "SyncFS", "SyncBackend", "SyncClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // Test doubles, for test targets (and the benchmarks) only: no product depends on them
        // (scripts/lint.sh).
        .target(
            name: "SyncBackendTesting",
            dependencies: ["SyncBackend"],
            swiftSettings: strict
        ),
        .target(
            name: "SyncServerTesting",
            dependencies: [
                "SyncServer", "SyncBackend",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "SyncPostgresTesting",
            dependencies: ["SyncPostgres", .product(name: "PostgresNIO", package: "postgres-nio")],
            swiftSettings: strict
        ),
        // What the test targets share: the one `syncfs-mount serve` launcher, the one seeded
        // generator, the one wait for a condition and the one temporary directory. Foundation and
        // Glibc only, so MountTests still depends on no library of ours.
        .target(
            name: "TestSupport",
            path: "Tests/TestSupport",
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncFSTests",
            dependencies: [
                "SyncFS", "SyncBackend", "SyncBackendTesting", "SQLiteSupport", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The SQLite plumbing every database shares (migrations, the manifest codec) and
        // doc/FORMATS.md kept true against the schemas and facts.
        .testTarget(
            name: "SQLiteSupportTests",
            dependencies: ["SQLiteSupport", "SyncFS", "SyncBackend", "SyncServer", "TestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncBackendTests",
            // The conformance suite runs against the HTTP container too, through a real server,
            // and against PostgreSQL, with chunks on disk and in Ceph RGW (#16).
            dependencies: [
                "SyncBackend", "SyncServer", "SyncClient", "SyncPostgres", "SyncS3", "SyncServerPostgres",
                "SyncBackendTesting", "SyncServerTesting", "SyncPostgresTesting", "syncfs-mount", "SyncSealed",
                "TestSupport", .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncServerTests",
            dependencies: [
                "SyncServer", "SyncClient", "SyncBackend", "SyncPostgres", "SyncS3", "SyncServerPostgres",
                "SyncBackendTesting", "SyncServerTesting", "SyncPostgresTesting", "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncS3Tests",
            dependencies: [
                "SyncS3", "SyncBackend", "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncPostgresTests",
            dependencies: [
                "SyncPostgres", "SyncBackend", "SyncS3", "SyncPostgresTesting", "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncSealedTests",
            dependencies: [
                "SyncSealed", "SyncBackend", "SyncBackendTesting", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncObservabilityTests",
            dependencies: ["SyncObservability", "TestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncCredentialsTests",
            dependencies: ["SyncCredentials"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncMergeTests",
            dependencies: ["SyncMerge", "TestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "MountTests",
            dependencies: ["TestSupport"],
            exclude: ["Support/hostile_server.py", "Support/lying_proxy.py"],
            swiftSettings: strict
        ),
    ]
)
