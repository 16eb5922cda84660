import EngineTestSupport
import Testing

@testable import RuleEngine

/// The folded table's cell widths: which values each width holds, and that a value comes back
/// bit for bit from every width it fits.
@Suite struct FoldedCellTests {
    @Test(arguments: [
        (0.0, FoldedCell.byte), (1, .byte), (254, .byte), (255, .short), (65_534, .short), (65_535, .wide),
        (-0.0, .wide), (-1, .wide), (0.5, .wide), (254.5, .wide), (254.nextUp, .wide), (255.nextDown, .wide),
        (65_534.nextUp, .wide), (Double.leastNonzeroMagnitude, .wide), (1e300, .wide), (.infinity, .wide),
        (-.infinity, .wide), (.nan, .wide), (-Double.nan, .wide)
    ])
    func theNarrowestWidthHoldsTheValueExactly(_ v: Double, _ expected: FoldedCell) {
        #expect(FoldedCell.narrowest(for: v) == expected, "\(v) (bits \(String(v.bitPattern, radix: 16)))")
    }

    static let edgeValues: [Double] = [
        0, 1, 2, 253, 254, 255, 256, 1_000, 65_533, 65_534, 65_535, -0.0, -1, 0.5, 1.34, 254.5, 254.nextUp,
        Double.leastNonzeroMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .infinity, -.infinity, 1e-300
    ]

    @Test func everyValueComesBackBitForBitFromEveryWidthItFits() {
        var checked = 0
        withUnsafeTemporaryAllocation(byteCount: 16, alignment: 1) { buf in
            for v in FoldedCellTests.edgeValues {
                for c in [FoldedCell.byte, .short, .wide] where FoldedCell.narrowest(for: v) <= c {
                    // At an odd offset: cells in a row are not aligned.
                    c.store(v, buf.baseAddress! + 1)
                    let back = c.load(UnsafeRawPointer(buf.baseAddress! + 1))
                    #expect(back?.bitPattern == v.bitPattern, "\(v) in \(c): \(String(describing: back))")
                    checked += 1
                }
            }
        }
        #expect(checked == 5 * 3 + 5 * 2 + 13)  // 5 values fit a byte, 5 more two bytes, 13 only eight
    }

    @Test func noValueIsAllOnesInEveryWidthAndANaNReadsAsNoValue() {
        withUnsafeTemporaryAllocation(byteCount: 8, alignment: 8) { buf in
            for c in [FoldedCell.byte, .short, .wide] {
                buf.initializeMemory(as: UInt8.self, repeating: 0)
                c.store(nil, buf.baseAddress!)
                #expect((0..<c.size).allSatisfy { buf[$0] == 0xFF } && c.load(UnsafeRawPointer(buf.baseAddress!)) == nil, "\(c)")
                buf.initializeMemory(as: UInt8.self, repeating: 0xFF)
                #expect(c.load(UnsafeRawPointer(buf.baseAddress!)) == nil, "\(c): an empty row's cell")
            }
            FoldedCell.wide.store(.nan, buf.baseAddress!)
            #expect(FoldedCell.wide.load(UnsafeRawPointer(buf.baseAddress!)) == nil)
        }
    }

    @Test func aLayoutPlacesCellsInInputOrderAndOnlyWidens() {
        // Inputs 0 (8 bytes), 2 (1 byte), 5 (2 bytes): offsets 0, 8, 9; a row of 11 bytes.
        var l = FoldedLayout().holding(.wide, at: 1 << 0).holding(.byte, at: 1 << 2).holding(.short, at: 1 << 5)
        #expect(l.columns == 0b100101 && l.wide == 0b1 && l.short == 0b100000 && l.stride == 11)
        #expect(l.offset(0, 1 << 0) == 0 && l.offset(2, 1 << 2) == 8 && l.offset(5, 1 << 5) == 9)
        #expect(l.holding(.byte, at: 1 << 5) == l && l.holding(.short, at: 1) == l, "a column never narrows")
        l = l.holding(.wide, at: 1 << 5)
        #expect(l.short == 0 && l.wide == 0b100001 && l.stride == 17 && l.cell(1 << 2) == .byte)
        #expect(l == FoldedLayout(columns: 0b100101, short: 0, wide: 0b100001))
        // Inputs 8 and later are counted, not kept: the same offsets either way.
        l = l.holding(.short, at: 1 << 7).holding(.wide, at: 1 << 9).holding(.byte, at: 1 << 40).holding(.short, at: 1 << 63)
        #expect(l.offset(7, 1 << 7) == 17 && l.offset(9, 1 << 9) == 19 && l.offset(40, 1 << 40) == 27 && l.offset(63, 1 << 63) == 28)
        #expect(l.stride == 30)
        for i in 0..<64 where l.columns & (1 << UInt64(i)) != 0 { #expect(l.offset(i, 1 << UInt64(i)) == l.counted(1 << UInt64(i)), "input \(i)") }
    }
}
