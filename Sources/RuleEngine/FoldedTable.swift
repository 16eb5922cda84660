import MobilityModel
import RuleLanguage

/// A day past the allowed lateness, folded into the values of the daily inputs it has (its raw
/// values can no longer change: a sample for it would be too late), as ``UserState/foldedDayList``
/// lists it (for tests and tools; a ``UserSnapshot`` carries folded days as ``UserSnapshot/FoldedDay``).
package struct FoldedDay: Hashable, Sendable {
    /// The local day.
    package var day: DayNumber
    /// Bit i: input i has a value.
    package var mask: UInt64
    /// The values, in input order.
    package var values: [Double]

    package init(day: DayNumber, mask: UInt64, values: [Double]) {
        self.day = day
        self.mask = mask
        self.values = values
    }
}

/// A run of consecutive folded days: rows `row..<row + count` of the folded table hold days
/// `day..<day + count`.
package struct FoldedRun: Hashable, Sendable {
    /// The run's first day.
    package var day: DayNumber
    /// The row of its first day.
    package var row: Int32
    /// How many days (rows) it has.
    package var count: Int32
}

/// The folded table (``UserState/foldedRuns``, ``UserState/foldedLayout``,
/// ``UserState/foldedCells``): lookup by day, appending in day order, widening when an input has
/// its first folded value or a value its column's cells cannot hold exactly, dropping the oldest
/// days, and re-expressing it for new rules.
extension UserState {
    /// The inputs that have a column in the folded table.
    package var foldedColumns: UInt64 { foldedLayout.columns }
    /// The folded table's rows.
    var foldedRowCount: Int { foldedRuns.last.map { Int($0.row + $0.count) } ?? 0 }

    /// The folded-table row of day `d`, if the day is folded (the last run is checked first: it
    /// holds all days but those of old anchored windows).
    @inline(__always)
    func foldedRow(_ d: DayNumber) -> Int? {
        let n = foldedRuns.count
        guard n > 0 else { return nil }
        var k = n - 1
        if d < foldedRuns[k].day {
            var lo = 0, hi = k - 1  // the last run starting on or before d
            while lo < hi {
                let mid = (lo + hi + 1) >> 1
                if foldedRuns[mid].day <= d { lo = mid } else { hi = mid - 1 }
            }
            k = lo
            guard k >= 0, foldedRuns[k].day <= d else { return nil }
        }
        let r = foldedRuns[k], off = Int(d - r.day)
        return off < Int(r.count) ? Int(r.row) + off : nil
    }

    /// The last folded day, if any.
    package var lastFoldedDay: DayNumber? { foldedRuns.last.map { $0.day + DayNumber($0.count) - 1 } }

    /// The folded value of input `i` on day `d`: nil when the day is not folded or has no value
    /// of the input (``foldedRow(_:)`` tells the two apart).
    @inline(__always)
    func foldedValue(_ i: Int, _ d: DayNumber) -> Double? {
        guard let row = foldedRow(d), i < 64 else { return nil }
        let bit: UInt64 = 1 << UInt64(i)
        let layout = foldedLayout
        guard layout.columns & bit != 0 else { return nil }
        let at = row * layout.stride + layout.offset(i, bit)
        return foldedCells.withUnsafeBytes { layout.cell(bit).load($0.baseAddress! + at) }
    }

    /// Appends a folded day after the last one: `values` are the values of the inputs in `mask`,
    /// in input order. A day without values is not stored.
    mutating func appendFoldedDay(_ d: DayNumber, mask: UInt64, values: UnsafeBufferPointer<Double>) {
        precondition(lastFoldedDay.map { d > $0 } ?? true, "folded days are appended in order")
        guard mask != 0 else { return }
        var layout = foldedLayout, k = 0
        for bit in mask.setBits {
            let c = FoldedCell.narrowest(for: values[k])
            if layout.columns & bit == 0 || c > layout.cell(bit) { layout = layout.holding(c, at: bit) }
            k += 1
        }
        if layout != foldedLayout { relayoutFolded(to: layout) }
        let stride = layout.stride
        let rows = foldedRowCount
        if let last = foldedRuns.last, case let gap = Int(d - last.day) - Int(last.count), UserState.fillsFoldedGap(gap, stride: stride) {
            foldedCells.growSlowly(for: (gap + 1) * stride)
            for _ in 0..<(gap * stride) { foldedCells.append(0xFF) }
            foldedRuns[foldedRuns.count - 1].count += Int32(gap + 1)
        } else {
            if foldedRuns.isEmpty { foldedRuns.reserveCapacity(1) }
            foldedRuns.append(FoldedRun(day: d, row: Int32(rows), count: 1))
            foldedCells.growSlowly(for: stride)
        }
        // The row, built on the stack and appended in one copy.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: stride) { row in
            row.initialize(repeating: 0xFF)
            let base = UnsafeMutableRawPointer(row.baseAddress!)
            var k = 0
            for bit in mask.setBits {
                layout.cell(bit).store(values[k], base + layout.offset(bit.trailingZeroBitCount, bit))
                k += 1
            }
            foldedCells.append(contentsOf: UnsafeBufferPointer(row))
        }
    }

    /// Whether a gap of `days` between folded days is filled with empty rows (else a run starts):
    /// when the rows (`stride` bytes each) cost no more than a run's header (16 bytes).
    @inline(__always) static func fillsFoldedGap(_ days: Int, stride: Int) -> Bool { days * stride <= 16 }

    /// Fills the empty folded table with a snapshot's folded days (ascending days; their values one
    /// per mask bit, day after day): every column as narrow as all of its values allow, the table's
    /// own gap rule, one allocation each for the runs and the cells, no relayout (restoring a state).
    mutating func restoreFolded(_ days: [UserSnapshot.FoldedDay], values: [Double]) {
        precondition(foldedRuns.isEmpty, "restoreFolded on a table with days")
        var layout = FoldedLayout()
        values.withUnsafeBufferPointer { all in
            var at = 0
            for d in days {
                for bit in d.mask.setBits {
                    if layout.wide & bit != 0 { at += 1; continue }  // as wide as it gets
                    let c = FoldedCell.narrowest(for: all[at])
                    if layout.columns & bit == 0 || c > layout.cell(bit) { layout = layout.holding(c, at: bit) }
                    at += 1
                }
            }
        }
        let stride = layout.stride
        guard stride > 0 else { return }
        // Rows and runs first (a day's row: its run's row plus its distance from the run's day).
        var runs = 0, rows = 0, previous: DayNumber?
        for d in days where d.mask != 0 {
            if let p = previous, UserState.fillsFoldedGap(Int(d.day - p) - 1, stride: stride) { rows += Int(d.day - p) } else { rows += 1; runs += 1 }
            previous = d.day
        }
        var runList: [FoldedRun] = []
        runList.reserveCapacity(runs)
        var table = [UInt8](repeating: 0xFF, count: rows * stride)
        values.withUnsafeBufferPointer { all in
            table.withUnsafeMutableBytes { cells in
                var at = 0, row = -1
                previous = nil
                for d in days {
                    if d.mask == 0 { continue }
                    precondition(previous.map { d.day > $0 } ?? true, "folded days in ascending order")
                    if let p = previous, UserState.fillsFoldedGap(Int(d.day - p) - 1, stride: stride) {
                        row += Int(d.day - p)
                        runList[runList.count - 1].count += Int32(d.day - p)
                    } else {
                        row += 1
                        runList.append(FoldedRun(day: d.day, row: Int32(row), count: 1))
                    }
                    previous = d.day
                    let base = cells.baseAddress! + row * stride
                    for bit in d.mask.setBits {
                        layout.cell(bit).store(all[at], base + layout.offset(bit.trailingZeroBitCount, bit))
                        at += 1
                    }
                }
            }
        }
        foldedRuns = runList
        foldedCells = table
        foldedLayout = layout
    }

    /// Rewrites the table for a layout with more or wider columns (an input has its first folded
    /// value, or a value its column cannot hold exactly): every value moves to its new cell.
    fileprivate mutating func relayoutFolded(to layout: FoldedLayout) {
        let old = foldedLayout, rows = foldedRowCount
        let from = old.stride, to = layout.stride
        var table = [UInt8](repeating: 0xFF, count: rows * to)
        foldedCells.withUnsafeBytes { src in
            table.withUnsafeMutableBytes { dst in
                for bit in old.columns.setBits {
                    let a = old.cell(bit), b = layout.cell(bit), oa = old.counted(bit), ob = layout.counted(bit)
                    for r in 0..<rows { b.store(a.load(src.baseAddress! + r * from + oa), dst.baseAddress! + r * to + ob) }
                }
            }
        }
        foldedCells = table
        foldedLayout = layout
    }

    /// Calls `body` with each folded day that has values: its day, mask and values in input order.
    package func forEachFoldedDay(_ body: (DayNumber, UInt64, UnsafeBufferPointer<Double>) throws -> Void) rethrows {
        let layout = foldedLayout, stride = layout.stride
        guard stride > 0 else { return }
        try withUnsafeTemporaryAllocation(of: Double.self, capacity: layout.columns.nonzeroBitCount) { buf in
            try foldedCells.withUnsafeBytes { cells in
                for run in foldedRuns {
                    for j in 0..<Int(run.count) {
                        let row = cells.baseAddress! + (Int(run.row) + j) * stride
                        var mask: UInt64 = 0, k = 0, at = 0
                        for bit in layout.columns.setBits {
                            let c = layout.cell(bit)
                            if let v = c.load(row + at) { mask |= bit; buf[k] = v; k += 1 }
                            at += c.size
                        }
                        if mask != 0 { try body(run.day + DayNumber(j), mask, UnsafeBufferPointer(rebasing: buf[0..<k])) }
                    }
                }
            }
        }
    }

    /// The folded days that have values, in order (for tests and tools).
    package var foldedDayList: [FoldedDay] {
        var list: [FoldedDay] = []
        forEachFoldedDay { d, m, vs in list.append(FoldedDay(day: d, mask: m, values: Array(vs))) }
        return list
    }

    /// Drops the folded days `keep` rejects. The steady state (the oldest days leave, every later
    /// one stays) moves the rows down in place; anything else rebuilds the table.
    mutating func keepFoldedDays(where keep: (DayNumber) -> Bool) {
        guard !foldedRuns.isEmpty else { return }
        // The first row kept, and whether every row after it is kept too.
        var first: (run: Int, offset: Int)?
        var tailKept = true
        outer: for (k, run) in foldedRuns.enumerated() {
            for j in 0..<Int(run.count) where keep(run.day + DayNumber(j)) != (first != nil) {
                if first == nil { first = (k, j) } else { tailKept = false; break outer }
            }
        }
        guard let first else { foldedRuns = []; foldedCells = []; foldedLayout = FoldedLayout(); return }
        guard tailKept else { rebuildFolded(foldedDayList.filter { keep($0.day) }); return }
        guard first.run > 0 || first.offset > 0 else { return }
        let dropped = Int(foldedRuns[first.run].row) + first.offset
        foldedRuns.removeFirst(first.run)
        foldedRuns[0].day += DayNumber(first.offset)
        foldedRuns[0].row += Int32(first.offset)
        foldedRuns[0].count -= Int32(first.offset)
        for k in foldedRuns.indices { foldedRuns[k].row -= Int32(dropped) }
        foldedCells.removeFirst(dropped * foldedLayout.stride)
    }

    /// Replaces the folded days.
    mutating func rebuildFolded(_ days: [FoldedDay]) {
        foldedRuns = []
        foldedCells = []
        foldedLayout = FoldedLayout()
        for f in days { f.values.withUnsafeBufferPointer { appendFoldedDay(f.day, mask: f.mask, values: $0) } }
    }

    /// Re-expresses the folded values for another list of inputs: shared inputs keep their values,
    /// new ones have none, dropped ones are forgotten.
    mutating func remapFolded(to inputs: [DailyInput]) {
        if foldedRuns.isEmpty { foldedInputs = inputs; foldedCells = []; foldedLayout = FoldedLayout(); return }
        if foldedInputs == inputs { foldedInputs = inputs; return }  // share the rules' array (one per user after a restore)
        guard inputs.count <= 64 else { rebuildFolded([]); foldedInputs = inputs; return }
        let old = foldedInputs
        let map: [Int?] = inputs.map { n in old.firstIndex(of: n) }
        var rebuilt: [FoldedDay] = []
        forEachFoldedDay { d, m, vs in
            var mask: UInt64 = 0, values: [Double] = []
            for (j, o) in map.enumerated() {
                guard let o, o < 64, case let bit:UInt64 = 1 << UInt64(o), m & bit != 0 else { continue }
                mask |= 1 << UInt64(j)
                values.append(vs[m.rank(of: bit)])
            }
            if mask != 0 { rebuilt.append(FoldedDay(day: d, mask: mask, values: values)) }
        }
        rebuildFolded(rebuilt)
        foldedInputs = inputs
    }
}
