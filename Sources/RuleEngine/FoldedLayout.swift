/// Where a folded row keeps each input's cell: the inputs with a column (bit i: input i), and the
/// width of each column's cells (``FoldedCell``). Cells sit in input order, so a column's offset
/// is the sum of the widths of the columns before it: every column counts one byte, a two-byte
/// column one more, an eight-byte column seven more.
package struct FoldedLayout: Hashable, Sendable {
    /// The inputs that have a column.
    package private(set) var columns: UInt64 = 0
    /// Of them, the ones with two-byte cells.
    package private(set) var short: UInt64 = 0
    /// Of them, the ones with eight-byte cells (the rest have one-byte cells).
    package private(set) var wide: UInt64 = 0
    /// The offsets of inputs 0–7's columns, a byte each (inputs 8 and later are counted).
    private var firstOffsets: UInt64 = 0
    /// The bytes of a row (kept: a day close reads it for every folded value, and a popcount is
    /// a dozen instructions on the x86-64 baseline the package is built for).
    private var rowBytes: Int32 = 0

    /// An empty layout (no columns).
    package init() {}

    /// A layout with these columns and widths (`short` and `wide` disjoint subsets of `columns`).
    init(columns: UInt64, short: UInt64, wide: UInt64) {
        precondition(short & wide == 0 && (short | wide) & ~columns == 0, "cell widths of columns that exist, one each")
        self.columns = columns
        self.short = short
        self.wide = wide
        recount()
    }

    /// The bytes of a row.
    @inline(__always) package var stride: Int { Int(rowBytes) }

    /// The width of the column of a one-bit mask `bit` (which must be a column).
    @inline(__always) func cell(_ bit: UInt64) -> FoldedCell { wide & bit != 0 ? .wide : short & bit != 0 ? .short : .byte }

    /// The byte offset, within a row, of the column of input `i` (`bit` = 1 << i).
    @inline(__always) func offset(_ i: Int, _ bit: UInt64) -> Int {
        i < 8 ? Int(truncatingIfNeeded: firstOffsets >> UInt64(i * 8)) & 0xFF : counted(bit)
    }

    /// The byte offset of the column of a one-bit mask `bit`, counted: every column before it
    /// counts one byte, a two-byte one one more, an eight-byte one seven more.
    @inline(__always) func counted(_ bit: UInt64) -> Int {
        let below = bit &- 1
        return (columns & below).nonzeroBitCount + (short & below).nonzeroBitCount + 7 * (wide & below).nonzeroBitCount
    }

    /// This layout with the column of `bit` added or widened so that it holds a cell of width `c`
    /// (a column never narrows: its earlier values may need the width).
    func holding(_ c: FoldedCell, at bit: UInt64) -> FoldedLayout {
        let now: FoldedCell = columns & bit == 0 ? .byte : cell(bit)
        let want = max(now, c)
        if columns & bit != 0 && want == now { return self }
        var l = self
        l.columns |= bit
        switch want {
        case .byte: break
        case .short: l.short |= bit
        case .wide: l.short &= ~bit; l.wide |= bit
        }
        l.recount()
        return l
    }

    /// Recomputes the row size and the first inputs' offsets from the masks.
    private mutating func recount() {
        rowBytes = Int32(columns.nonzeroBitCount + short.nonzeroBitCount + 7 * wide.nonzeroBitCount)
        firstOffsets = 0
        for i in 0..<8 where columns & (1 << UInt64(i)) != 0 {
            firstOffsets |= UInt64(counted(1 << UInt64(i))) << UInt64(i * 8)
        }
    }
}
