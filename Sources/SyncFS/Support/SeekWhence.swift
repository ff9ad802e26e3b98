/// Linux's `SEEK_DATA` and `SEEK_HOLE` (the Glibc module does not import them).
enum SeekWhence {
    static let data: Int32 = 3
    static let hole: Int32 = 4
}
