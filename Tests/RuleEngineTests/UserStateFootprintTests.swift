import EngineTestSupport
import MobilityModel
import Testing

@testable import RuleEngine

/// The heap footprint `mobility-bench memory` prints: capacity × stride plus 48 bytes an allocation.
@Suite struct UserStateFootprintTests {
    static func part(_ st: UserState, _ name: String) -> Int? { st.heapFootprint.first { $0.key == name }?.value }

    @Test func anEmptyStateHoldsOnlyItsStruct() {
        let st = UserState(user: "u", calendar: utc)
        #expect(UserStateFootprintTests.part(st, "state struct") == MemoryLayout<UserState>.stride)
        #expect(st.heapFootprint.filter { $0.key != "state struct" }.allSatisfy { $0.value == 0 })
    }

    @Test func eachPartCountsItsCapacity() {
        var st = UserState(user: "a-user-id-longer-than-15", calendar: utc)
        for k in 0..<10 {
            st.append(StoredValue(id: SampleID("v\(k)"), metric: .walkingSpeed, value: 1, end: .init(milliseconds: 0), provenance: .device), day: day0)
        }
        #expect(UserStateFootprintTests.part(st, "open values") == st.openValues.capacity * 24 + 48)
        #expect(UserStateFootprintTests.part(st, "id filter") == st.idFilter.words.capacity * 8 + 48 && !st.idFilter.isEmpty)
        #expect(UserStateFootprintTests.part(st, "user id") == 24 + 48)
    }

    @Test func theStateStaysWithinMemcpysCheaperSizes() {
        // A sample's ingest copies the state whole; past 256 bytes glibc's memcpy takes its loop
        // (the engine benchmark's instructions rose 1 % when a 261-byte state crossed it).
        #expect(MemoryLayout<UserState>.size <= 256)
    }
}
