/// The version `syncfs-mount --version` prints. Kept equal to the newest version heading of
/// CHANGELOG.md (a test checks): while the newest heading is "Unreleased" it is the next
/// version with `-dev`; at a release the heading `## X.Y.Z` and this constant change together.
enum SyncFSVersion {
    static let current = "0.1.0-dev"
}
