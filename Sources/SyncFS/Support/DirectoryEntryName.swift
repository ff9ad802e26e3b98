import Glibc

extension UnsafeMutablePointer where Pointee == dirent {
    /// The entry's name, read in place.
    ///
    /// glibc packs entries by `d_reclen`, so the last one in its buffer may be shorter than
    /// `MemoryLayout<dirent>.size`: copying `pointee.d_name` (a 256-byte tuple) can read past the
    /// buffer's end and fault. This reads only up to the name's terminating NUL.
    var entryName: String {
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        return String(cString: UnsafeRawPointer(self).advanced(by: offset).assumingMemoryBound(to: CChar.self))
    }
}
