#if canImport(Glibc)
    import Glibc
#endif

/// The last string one field of a payload's items decoded to, with the bytes it was read from,
/// so that the next item with the same bytes shares the string (a retain) instead of allocating
/// and copying another: a phone's sync repeats its `source.bundleId` (25 bytes and more, past
/// Swift's 15-byte inline strings) on every sample.
///
/// The bytes are the parser's (valid until its next document), so one of these lives for one
/// payload only.
struct RepeatedString {
    private var start: UnsafePointer<UInt8>?
    private var count = 0
    private var last = ""

    /// The string of `bytes`: the last one when the bytes are the same.
    mutating func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        guard let p = bytes.baseAddress, bytes.count > 0 else { return "" }
        if bytes.count == count, let s = start, s == p || memcmp(s, p, count) == 0 { return last }
        start = p
        count = bytes.count
        last = String(decoding: bytes, as: UTF8.self)
        return last
    }
}
