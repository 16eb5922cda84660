/// The set bits of a mask, lowest first, each as a one-bit mask: `for bit in mask.setBits`.
/// The folded table walks its columns this way (a column per set bit of `foldedColumns`).
struct SetBits: Sequence, IteratorProtocol {
    /// The bits not visited yet.
    var rest: UInt64

    /// The lowest bit not visited yet, as a one-bit mask.
    @inline(__always) mutating func next() -> UInt64? {
        guard rest != 0 else { return nil }
        let bit = rest & (~rest &+ 1)
        rest &= rest &- 1
        return bit
    }
}

extension UInt64 {
    /// The set bits, lowest first, each as a one-bit mask.
    @inline(__always) var setBits: SetBits { SetBits(rest: self) }

    /// How many bits are set below a one-bit mask `bit`: where the item of that bit sits in a list
    /// that has one item per set bit, in bit order (the column of an input in a folded row).
    @inline(__always) func rank(of bit: UInt64) -> Int { (self & (bit &- 1)).nonzeroBitCount }
}
