/// A Bloom filter of sample ids (two bits each), so that a new sample is told from a
/// re-delivery without scanning a user's open values: "certainly not held" or "maybe".
///
/// Sized at 8 bits per id when rebuilt and rebuilt once it holds fewer than 4 bits per id noted
/// since (5 to 15 % false positives, each costing a scan of the open values: a few ns a sample on
/// average); ids of folded or removed values leave with the rebuild. Not stored: a restored user
/// starts with an empty filter.
struct IDFilter: Sendable {
    /// The bits, a power of two of words (empty: not built).
    private(set) var words: [UInt64] = []
    /// How many ids were noted since the filter was sized.
    private(set) var load = 0

    /// Whether the filter has not been built (it then knows nothing).
    var isEmpty: Bool { words.isEmpty }

    /// The two bit positions of an id in a filter of `words` words (a power of two).
    @inline(__always) private static func bits(_ id: SampleID, words: Int) -> (Int, Int) {
        let mask = UInt64(words * 64 - 1)
        return (Int(id.rawValue & mask), Int((id.rawValue >> 32) & mask))
    }

    /// Whether an id may have been noted (false: certainly not). The filter must not be empty.
    @inline(__always) func mightContain(_ id: SampleID) -> Bool {
        let (a, b) = IDFilter.bits(id, words: words.count)
        return words[a >> 6] & (1 << UInt64(a & 63)) != 0 && words[b >> 6] & (1 << UInt64(b & 63)) != 0
    }

    @inline(__always) private mutating func set(_ id: SampleID) {
        let (a, b) = IDFilter.bits(id, words: words.count)
        words[a >> 6] |= 1 << UInt64(a & 63)
        words[b >> 6] |= 1 << UInt64(b & 63)
    }

    /// Notes an id; false, noting nothing, when the filter is full (or empty): rebuild it then.
    @inline(__always) mutating func insert(_ id: SampleID) -> Bool {
        load += 1
        if load * 4 > words.count * 64 { return false }
        set(id)
        return true
    }

    /// Sizes the filter for the ids of `values` and fills it.
    mutating func rebuild(_ values: [StoredValue]) {
        let n = values.count
        var size = 2
        while size * 64 < n * 8 { size <<= 1 }
        if words.count == size { for k in words.indices { words[k] = 0 } } else { words = Array(repeating: 0, count: size) }
        for v in values { set(v.id) }
        load = n
    }
}

extension UserState {
    /// Whether an id may be held by an open day (false: certainly not). An empty filter (a state
    /// just built or loaded) answers "maybe".
    @inline(__always) func mightHold(_ id: SampleID) -> Bool {
        guard !idFilter.isEmpty else { return !openDays.isEmpty }
        return idFilter.mightContain(id)
    }

    /// Notes the id of a value just added to an open day.
    @inline(__always) mutating func noteID(_ id: SampleID) {
        if !idFilter.insert(id) { idFilter.rebuild(openValues) }
    }
}
