/// SplitMix64: a seeded, reproducible random generator, the same on every platform (the
/// simulator's populations and traffic, and the property tests, which print the seed on failure).
package struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The seed it started from.
    package let seed: UInt64
    private var state: UInt64

    package init(seed: UInt64) {
        self.seed = seed
        self.state = seed
    }

    /// The next 64 random bits.
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
