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
        #expect(st.foldedColumns == 0b101 && st.foldedValues.count == 3 * 2)
        #expect(st.foldedValue(0, 10) == 1 && st.foldedValue(2, 10) == nil && st.foldedValue(2, 12) == 30)
        #expect(st.foldedDayList == days)
    }

    @Test func shortGapsAreEmptyRowsLongerOnesStartARun() {
        // One column: a gap of up to two days costs no more than a run's header, so it is filled.
        let st = FoldedTableTests.folded([
            FoldedDay(day: 0, mask: 1, values: [1]), FoldedDay(day: 3, mask: 1, values: [2]),
            FoldedDay(day: 7, mask: 1, values: [3])
        ])
        #expect(st.foldedRuns == [FoldedRun(day: 0, row: 0, count: 4), FoldedRun(day: 7, row: 4, count: 1)])
        #expect(st.foldedRow(1) == 1 && st.foldedValue(0, 1) == nil && st.foldedRow(5) == nil)
        #expect(UserState.fillsFoldedGap(2, width: 1) && !UserState.fillsFoldedGap(3, width: 1) && !UserState.fillsFoldedGap(1, width: 3))
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
