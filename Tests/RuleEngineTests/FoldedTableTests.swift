import EngineTestSupport
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

@testable import RuleEngine

/// The folded table: a row per day, a column per input with a folded value, runs of rows.
@Suite struct FoldedTableTests {
    static func folded(_ days: [FoldedDay]) -> UserState {
        var st = UserState(user: "u", calendar: utc)
        st.rebuildFolded(days)
        return st
    }

    @Test func foldedTableAnswersEveryDayAndListsItsDaysBack() {
        // Days with gaps of every size and inputs that appear late (the table widens): each
        // input's value on each day is what was folded, nothing on other days, and the days list
        // back exactly (the state store writes that list).
        var rng = SplitMix64(seed: 5)
        for _ in 0..<60 {
            var days: [FoldedDay] = [], d = DayNumber(Int.random(in: -5...5, using: &rng))
            for _ in 0..<Int.random(in: 0...40, using: &rng) {
                let mask = max(1, UInt64.random(in: 1...7, using: &rng) & (days.count < 5 ? 1 : 7))  // inputs 1 and 2 from the 6th day on
                days.append(FoldedDay(day: d, mask: mask, values: (0..<mask.nonzeroBitCount).map { Double(d) * 10 + Double($0) }))
                d += DayNumber(Int.random(in: 1...5, using: &rng))
            }
            var st = UserState(user: "u", calendar: utc)
            st.rebuildFolded(days)
            #expect(st.foldedDayList == days)
            for q in DayNumber(-10)...(d + 3) {
                let f = days.first { $0.day == q }
                for i in 0..<3 {
                    let expected: Double? = f.flatMap { f in
                        f.mask & (1 << UInt64(i)) == 0 ? nil : f.values[(f.mask & ((1 << UInt64(i)) - 1)).nonzeroBitCount]
                    }
                    #expect(st.foldedValue(i, q) == expected, "input \(i) day \(q) in \(days.map(\.day))")
                }
                // A day outside every run is not folded at all (the engine then looks at open days).
                if st.foldedRow(q) != nil { #expect(q >= days.first!.day && q <= days.last!.day) }
            }
            // Dropping the oldest days in place and dropping a middle day (a rebuild) keep the rest.
            guard days.count > 3 else { continue }
            let cut = days[days.count / 2].day
            st.keepFoldedDays { $0 >= cut }
            #expect(st.foldedDayList == days.filter { $0.day >= cut })
            let hole = days[days.count - 2].day
            st.keepFoldedDays { $0 != hole }
            #expect(st.foldedDayList == days.filter { $0.day >= cut && $0.day != hole })
        }
    }

    @Test func anInputFoldedLateWidensTheTableKeepingEarlierRows() {
        // Input 2 has its first value on the third day: earlier rows get an empty cell for it.
        let days = [
            FoldedDay(day: 10, mask: 0b001, values: [1]), FoldedDay(day: 11, mask: 0b001, values: [2]),
            FoldedDay(day: 12, mask: 0b101, values: [3, 30])
        ]
        let st = FoldedTableTests.folded(days)
        #expect(st.foldedColumns == 0b101 && st.foldedCells.count == 3 * 2)
        #expect(st.foldedValue(0, 10) == 1 && st.foldedValue(2, 10) == nil && st.foldedValue(2, 12) == 30)
        #expect(st.foldedDayList == days)
    }

    @Test func shortGapsAreEmptyRowsLongerOnesStartARun() {
        // One 8-byte column: a gap of up to two days costs no more than a run's header, so it is filled.
        let st = FoldedTableTests.folded([
            FoldedDay(day: 0, mask: 1, values: [1.5]), FoldedDay(day: 3, mask: 1, values: [2.5]),
            FoldedDay(day: 7, mask: 1, values: [3.5])
        ])
        #expect(st.foldedRuns == [FoldedRun(day: 0, row: 0, count: 4), FoldedRun(day: 7, row: 4, count: 1)])
        #expect(st.foldedRow(1) == 1 && st.foldedValue(0, 1) == nil && st.foldedRow(5) == nil)
        #expect(UserState.fillsFoldedGap(2, stride: 8) && !UserState.fillsFoldedGap(3, stride: 8) && !UserState.fillsFoldedGap(1, stride: 24))
        // A one-byte column (a count): rows of a byte, so gaps of up to 16 days are filled.
        let counts = FoldedTableTests.folded([
            FoldedDay(day: 0, mask: 1, values: [3]), FoldedDay(day: 17, mask: 1, values: [4]),
            FoldedDay(day: 35, mask: 1, values: [5])
        ])
        #expect(counts.foldedRuns == [FoldedRun(day: 0, row: 0, count: 18), FoldedRun(day: 35, row: 18, count: 1)])
        #expect(counts.foldedValue(0, 17) == 4 && counts.foldedValue(0, 16) == nil && counts.foldedRow(20) == nil)
    }

    /// A folded-day list with its values as bit patterns (`==` on `Double` equates 0.0 and −0.0).
    static func bits(_ days: [FoldedDay]) -> [[UInt64]] {
        days.map { [UInt64(bitPattern: Int64($0.day)), $0.mask] + $0.values.map(\.bitPattern) }
    }

    @Test func aCountColumnTakesOneByteADay() {
        // A percentile (8 bytes) and a count (1 byte) over 30 days: 9 bytes a row, not 16.
        let days = (0..<30).map { FoldedDay(day: DayNumber($0), mask: 0b11, values: [1.2 + Double($0) / 100, Double($0 % 12)]) }
        let st = FoldedTableTests.folded(days)
        #expect(st.foldedLayout == FoldedLayout(columns: 0b11, short: 0, wide: 0b01))
        #expect(st.foldedCells.count == 30 * 9 && st.foldedRuns.count == 1)
        #expect(FoldedTableTests.bits(st.foldedDayList) == FoldedTableTests.bits(days))
    }

    @Test func aValueThatDoesNotFitWidensItsColumnAndKeepsEveryValue() {
        // A count column (input 1) beside an 8-byte one: 255 needs two bytes, then 70 000, 2.5
        // and −0.0 need eight; after each, every earlier value of both columns reads back exactly.
        var st = UserState(user: "u", calendar: utc)
        var days: [FoldedDay] = []
        let counts: [Double] = [3, 0, 254, 255, 65_534, 70_000, 2.5, -0.0, 7]
        let widths: [FoldedCell] = [.byte, .byte, .byte, .short, .short, .wide, .wide, .wide, .wide]
        for (k, v) in counts.enumerated() {
            let f = FoldedDay(day: DayNumber(k), mask: 0b11, values: [0.9 + Double(k) / 7, v])
            f.values.withUnsafeBufferPointer { st.appendFoldedDay(f.day, mask: f.mask, values: $0) }
            days.append(f)
            #expect(st.foldedLayout.cell(0b10) == widths[k], "after \(v)")
            #expect(FoldedTableTests.bits(st.foldedDayList) == FoldedTableTests.bits(days), "after \(v)")
            #expect(st.foldedCells.count == days.count * st.foldedLayout.stride)
            for (j, d) in days.enumerated() { #expect(st.foldedValue(1, DayNumber(j))?.bitPattern == d.values[1].bitPattern) }
        }
        #expect(st.foldedValue(1, 7)?.sign == .minus, "−0.0 keeps its sign")
    }

    @Test func randomValuesReadBackBitForBitThroughDropsAndARestore() throws {
        // Small counts, larger whole numbers, fractions, negatives and −0.0 in four inputs with
        // random gaps: every value reads back bit for bit; each column is exactly as wide as its
        // values need; after dropping the oldest days and a snapshot round trip, the same values,
        // the restored columns as wide as the values left need.
        func value(_ rng: inout SplitMix64) -> Double {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<5: Double(Int.random(in: 0...254, using: &rng))
            case 5: Double(Int.random(in: 255...70_000, using: &rng))
            case 6: -0.0
            case 7: -Double(Int.random(in: 1...3, using: &rng))
            default: Double.random(in: 0...300, using: &rng)
            }
        }
        let inputs = (0..<4).map { DailyInput(metric: .walkingSpeed, provenance: nil, aggregation: .percentile(Double(10 + $0), .linear)) }
        var rng = SplitMix64(seed: 18)
        for round in 0..<40 {
            var days: [FoldedDay] = [], d = DayNumber(0)
            let narrowOnly = round % 3 == 0  // some tables with whole numbers only
            for _ in 0..<Int.random(in: 1...60, using: &rng) {
                let mask = UInt64.random(in: 1...15, using: &rng)
                let vs = (0..<mask.nonzeroBitCount).map { _ in narrowOnly ? Double(Int.random(in: 0...300, using: &rng)) : value(&rng) }
                days.append(FoldedDay(day: d, mask: mask, values: vs))
                d += DayNumber(Int.random(in: 1...20, using: &rng))
            }
            var st = FoldedTableTests.folded(days)
            st.foldedInputs = inputs
            func check(_ st: UserState, _ expected: [FoldedDay], _ what: String) {
                #expect(FoldedTableTests.bits(st.foldedDayList) == FoldedTableTests.bits(expected), "\(what), round \(round)")
                var need = FoldedLayout()
                for f in expected {
                    for (k, bit) in f.mask.setBits.enumerated() { need = need.holding(FoldedCell.narrowest(for: f.values[k]), at: bit) }
                }
                #expect(st.foldedLayout == need, "\(what), round \(round): columns as wide as their values need")
                for f in expected {
                    for i in 0..<4 {
                        let bit: UInt64 = 1 << UInt64(i)
                        let want = f.mask & bit == 0 ? nil : f.values[f.mask.rank(of: bit)]
                        #expect(st.foldedValue(i, f.day)?.bitPattern == want?.bitPattern, "\(what), round \(round), day \(f.day), input \(i)")
                    }
                }
            }
            check(st, days, "built")
            guard days.count > 2 else { continue }
            let cut = days[days.count / 2].day
            st.keepFoldedDays { $0 >= cut }
            let kept = days.filter { $0.day >= cut }
            #expect(FoldedTableTests.bits(st.foldedDayList) == FoldedTableTests.bits(kept), "dropped, round \(round)")
            let back = UserState(restoring: st.snapshot(changesOnly: false), alertNames: [], inputs: inputs)
            check(back, kept, "restored")
        }
    }

    @Test func remappingKeepsSharedInputsAndForgetsDroppedOnes() {
        let speed = DailyInput(metric: .walkingSpeed, provenance: nil, aggregation: .mean)
        let length = DailyInput(metric: .walkingStepLength, provenance: nil, aggregation: .mean)
        let count = DailyInput(metric: .walkingSpeed, provenance: .device, aggregation: .count)
        var st = FoldedTableTests.folded([FoldedDay(day: 5, mask: 0b11, values: [1.5, 0.7]), FoldedDay(day: 6, mask: 0b10, values: [0.8])])
        st.foldedInputs = [speed, length]
        st.remapFolded(to: [count, length])  // speed dropped, count new (no folded values), length kept
        #expect(st.foldedInputs == [count, length])
        #expect(st.foldedDayList == [FoldedDay(day: 5, mask: 0b10, values: [0.7]), FoldedDay(day: 6, mask: 0b10, values: [0.8])])
        st.remapFolded(to: [length])
        #expect(st.foldedDayList == [FoldedDay(day: 5, mask: 0b1, values: [0.7]), FoldedDay(day: 6, mask: 0b1, values: [0.8])])
        st.remapFolded(to: [speed])
        #expect(st.foldedDayList.isEmpty && st.foldedRuns.isEmpty)
    }
}
