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
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
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
            ],
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
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "syncfs-mount",
            dependencies: [
                "SyncFS", "SyncBackend",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncFSTests",
            dependencies: ["SyncFS", "SyncBackend", "SQLiteSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncBackendTests",
            dependencies: ["SyncBackend"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncMergeTests",
            dependencies: ["SyncMerge"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "MountTests",
            dependencies: [],
            swiftSettings: strict
        ),
    ]
)
