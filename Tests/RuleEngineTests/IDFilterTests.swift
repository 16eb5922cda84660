import EngineTestSupport
import TestSupport
import Testing

@testable import RuleEngine

/// The Bloom filter of open-day sample ids: never a false "not held", few false "maybe"s.
@Suite struct IDFilterTests {
    static func values(_ ids: Range<Int>, prefix: String = "id-") -> [StoredValue] {
        ids.map { StoredValue(id: SampleID("\(prefix)\($0)"), metric: .walkingSpeed, value: 1, end: .init(milliseconds: 0), provenance: .device) }
    }

    @Test func noIdNotedIsEverReportedAbsentAcrossRebuilds() {
        var f = IDFilter()
        var held: [StoredValue] = []
        for v in IDFilterTests.values(0..<5000) {
            held.append(v)
            if !f.insert(v.id) { f.rebuild(held) }
            #expect(!f.isEmpty)
        }
        for v in held { #expect(f.mightContain(v.id)) }
    }

    @Test func aRebuiltFilterHasEightBitsAnIdAndIsFullAtFour() {
        var f = IDFilter()
        let held = IDFilterTests.values(0..<1000)
        f.rebuild(held)
        // A power of two of words, at least 8 bits per id.
        #expect(f.words.count == 128 && f.words.count & (f.words.count - 1) == 0 && f.load == 1000)
        var inserted = 0
        for v in IDFilterTests.values(0..<5000, prefix: "new-") {
            guard f.insert(v.id) else { break }
            inserted += 1
        }
        #expect(inserted == 128 * 64 / 4 - 1000)  // full once fewer than 4 bits remain per id noted
    }

    @Test func falsePositivesStayRareAtTheFullestPoint() {
        var f = IDFilter()
        f.rebuild(IDFilterTests.values(0..<2048))  // 8 bits per id
        for v in IDFilterTests.values(0..<2048, prefix: "more-") { let noted = f.insert(v.id); #expect(noted) }  // now 4 bits per id
        let strangers = IDFilterTests.values(0..<20_000, prefix: "stranger-")
        let maybes = strangers.filter { f.mightContain($0.id) }.count
        #expect(maybes < strangers.count * 20 / 100, "\(maybes) of \(strangers.count)")
    }

    @Test func aStateWithoutAFilterAnswersMaybeOnlyWhenItHasOpenDays() {
        #expect(UserState(user: "u", calendar: utc).idFilter.isEmpty && !UserState(user: "u", calendar: utc).mightHold(SampleID("x")))
        var snapshot = UserSnapshot(user: "u")
        snapshot.openValues = IDFilterTests.values(0..<3)
        snapshot.openDays = [.init(day: day0, start: 0, count: 3, changedFrom: nil, storedCount: 3)]
        var st = UserState(restoring: snapshot, alertNames: [], inputs: [])
        #expect(st.idFilter.isEmpty && st.mightHold(SampleID("x")) && st.locate(SampleID("x")) == nil)
        #expect(st.locate(SampleID("id-2"))! == (0, 2))
        // The first value noted builds the filter from every open value.
        st.append(IDFilterTests.values(3..<4)[0], day: day0)
        #expect(!st.idFilter.isEmpty && st.idFilter.load == 4)
        for v in IDFilterTests.values(0..<4) { #expect(st.mightHold(v.id)) }
    }
}
