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

    /// Creates a folded day.
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

/// The folded table (``UserState/foldedRuns``, ``UserState/foldedColumns``,
/// ``UserState/foldedValues``): lookup by day, appending in day order, widening when an input
/// has its first folded value, dropping the oldest days, and re-expressing it for new rules.
extension UserState {
    /// The folded table's width (columns per row).
    @inline(__always) var foldedWidth: Int { foldedColumns.nonzeroBitCount }
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
        guard foldedColumns & bit != 0 else { return nil }
        let v = foldedValues[row * foldedWidth + foldedColumns.rank(of: bit)]
        return v.isNaN ? nil : v
    }

    /// Appends a folded day after the last one: `values` are the values of the inputs in `mask`,
    /// in input order. A day without values is not stored.
    mutating func appendFoldedDay(_ d: DayNumber, mask: UInt64, values: UnsafeBufferPointer<Double>) {
        precondition(lastFoldedDay.map { d > $0 } ?? true, "folded days are appended in order")
        guard mask != 0 else { return }
        if mask & ~foldedColumns != 0 { widenFolded(to: foldedColumns | mask) }
        let w = foldedWidth
        let rows = foldedRowCount
        if let last = foldedRuns.last, case let gap = Int(d - last.day) - Int(last.count), UserState.fillsFoldedGap(gap, width: w) {
            foldedValues.growSlowly(for: (gap + 1) * w)
            for _ in 0..<(gap * w) { foldedValues.append(.nan) }
            foldedRuns[foldedRuns.count - 1].count += Int32(gap + 1)
        } else {
            if foldedRuns.isEmpty { foldedRuns.reserveCapacity(1) }
            foldedRuns.append(FoldedRun(day: d, row: Int32(rows), count: 1))
            foldedValues.growSlowly(for: w)
        }
        var k = 0
        for bit in foldedColumns.setBits {
            if mask & bit != 0 { foldedValues.append(values[k]); k += 1 } else { foldedValues.append(.nan) }
        }
    }

    /// Whether a gap of `days` between folded days is filled with empty rows (else a run starts):
    /// when the rows cost no more than a run's header (16 bytes).
    @inline(__always) static func fillsFoldedGap(_ days: Int, width: Int) -> Bool { days * width <= 2 }

    /// Makes room for a folded table of `rows` rows and `runs` runs with the given columns, so
    /// that appending its days allocates nothing more (restoring a state). The table must be empty.
    mutating func reserveFolded(columns: UInt64, rows: Int, runs: Int) {
        precondition(foldedRuns.isEmpty, "reserveFolded on a table with days")
        foldedColumns = columns
        foldedValues.reserveCapacity(rows * columns.nonzeroBitCount)
        foldedRuns.reserveCapacity(runs)
    }

    /// Adds columns to the folded table (an input has its first folded value).
    fileprivate mutating func widenFolded(to columns: UInt64) {
        let old = foldedColumns, oldWidth = foldedWidth, rows = foldedRowCount
        var table: [Double] = []
        table.reserveCapacity(rows * columns.nonzeroBitCount)
        for r in 0..<rows {
            for bit in columns.setBits {
                table.append(old & bit != 0 ? foldedValues[r * oldWidth + old.rank(of: bit)] : .nan)
            }
        }
        foldedValues = table
        foldedColumns = columns
    }

    /// Calls `body` with each folded day that has values: its day, mask and values in input order.
    package func forEachFoldedDay(_ body: (DayNumber, UInt64, UnsafeBufferPointer<Double>) throws -> Void) rethrows {
        let w = foldedWidth
        guard w > 0 else { return }
        try withUnsafeTemporaryAllocation(of: Double.self, capacity: w) { buf in
            for run in foldedRuns {
                for j in 0..<Int(run.count) {
                    let row = (Int(run.row) + j) * w
                    var mask: UInt64 = 0, k = 0, c = 0
                    for bit in foldedColumns.setBits {
                        let v = foldedValues[row + c]
                        c += 1
                        if !v.isNaN { mask |= bit; buf[k] = v; k += 1 }
                    }
                    if mask != 0 { try body(run.day + DayNumber(j), mask, UnsafeBufferPointer(rebasing: buf[0..<k])) }
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
        guard let first else { foldedRuns = []; foldedValues = []; foldedColumns = 0; return }
        guard tailKept else { rebuildFolded(foldedDayList.filter { keep($0.day) }); return }
        guard first.run > 0 || first.offset > 0 else { return }
        let w = foldedWidth
        let dropped = Int(foldedRuns[first.run].row) + first.offset
        foldedRuns.removeFirst(first.run)
        foldedRuns[0].day += DayNumber(first.offset)
        foldedRuns[0].row += Int32(first.offset)
        foldedRuns[0].count -= Int32(first.offset)
        for k in foldedRuns.indices { foldedRuns[k].row -= Int32(dropped) }
        foldedValues.removeFirst(dropped * w)
    }

    /// Replaces the folded days.
    mutating func rebuildFolded(_ days: [FoldedDay]) {
        foldedRuns = []
        foldedValues = []
        foldedColumns = 0
        for f in days { f.values.withUnsafeBufferPointer { appendFoldedDay(f.day, mask: f.mask, values: $0) } }
    }

    /// Re-expresses the folded values for another list of inputs: shared inputs keep their values,
    /// new ones have none, dropped ones are forgotten.
    mutating func remapFolded(to inputs: [DailyInput]) {
        if foldedRuns.isEmpty { foldedInputs = inputs; foldedValues = []; foldedColumns = 0; return }
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
