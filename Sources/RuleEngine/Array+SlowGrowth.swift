extension Array {
    /// Appends, growing by an eighth (at least 8 elements) when full instead of doubling: for
    /// per-user arrays that grow a little every day, doubling leaves up to half of each one unused
    /// for good (a user's history stops growing at the rules' look-back). Growth stays amortised.
    @inline(__always) mutating func appendGrowingSlowly(_ x: Element) {
        growSlowly(for: 1)
        append(x)
    }

    /// Makes room for `n` more elements the same way (before an insertion).
    @inline(__always) mutating func growSlowly(for n: Int) {
        if count + n > capacity { reserveCapacity(count + Swift.max(n, 8, count >> 3)) }
    }
}
