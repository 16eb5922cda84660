import Foundation
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

@testable import RuleEngine
@testable import StateStore

/// A stored state with a tag this build does not know (a newer build's, or a corrupted byte) is
/// an error naming the user and the tag, never read as a guess (an unknown alert state used to
/// read as firing, an unknown provenance as device).
@Suite struct StrictDecodingTests {
    /// A v3 head with one alert state whose tag byte is `tag` (2 is firing), then no revised days.
    static func blob(alertTag tag: UInt8) -> [UInt8] {
        var w = UserStateCodec.Writer()
        w.i32(UserStateCodec.v3Marker)
        w.str("UTC"); w.u8(0); w.optI32(20_500); w.optI32(20_501)
        w.i32(0)  // folded inputs
        w.i32(0)  // folded days
        w.i32(0)  // sync index
        w.i32(0)  // events
        w.i32(1); w.str("slow"); w.u8(tag)
        if tag == 2 { w.i64(1); w.i64(2); w.i64(3); w.i64(4) }
        w.i64(.min); w.i64(5)  // quiet until, last evaluated
        w.i32(0)  // revised days
        return w.bytes
    }

    /// One open-day chunk of one value whose provenance byte is `provenance`.
    static func chunk(provenance: UInt8) -> [UInt8] {
        var w = UserStateCodec.Writer()
        w.i32(1)
        w.i64(42); w.f64(1.2); w.i64(1_000); w.u8(MetricKind.walkingSpeed.rawValue); w.u8(provenance)
        return w.bytes
    }

    @Test func theHandMadeBlobsReadWhenTheirTagsAreKnown() throws {
        let s = try UserStateCodec.decode(user: "u", StrictDecodingTests.blob(alertTag: 2)).restored
        #expect(s.alerts["slow"]?.isFiring == true)
        var values: [StoredValue] = []
        try UserStateCodec.decodeChunk(StrictDecodingTests.chunk(provenance: Provenance.userEntered.rawValue), user: "u", into: &values)
        #expect(values.map(\.provenance) == [.userEntered])
    }

    @Test func anUnknownAlertStateIsAnErrorNamingTheUserAndTheTag() throws {
        let e = try #require(throws: UserStateDecodingError.self) {
            try UserStateCodec.decode(user: "patient-7", StrictDecodingTests.blob(alertTag: 9))
        }
        #expect(e.user == "patient-7")
        #expect(e.code == .unknownTag(field: "alert state of rule slow", tag: 9))
        #expect(e.user == "patient-7")
        // The log line names the user by a hash of its id, never by the id (docs/security.md).
        #expect("\(e)".contains("id hash") && !"\(e)".contains("patient-7") && "\(e)".contains("alert state") && "\(e)".contains("9"))
    }

    @Test func anUnknownProvenanceIsAnError() throws {
        var values: [StoredValue] = []
        let e = try #require(throws: UserStateDecodingError.self) {
            try UserStateCodec.decodeChunk(StrictDecodingTests.chunk(provenance: 7), user: "patient-7", into: &values)
        }
        #expect(e.user == "patient-7" && e.code == .unknownTag(field: "provenance", tag: 7))
    }

    @Test func otherUnknownTagsAreErrors() throws {
        // An event category, a daily input's provenance and percentile method, a presence flag.
        var w = UserStateCodec.Writer()
        w.i32(UserStateCodec.v3Marker); w.str("UTC"); w.u8(0); w.optI32(nil); w.optI32(nil)
        w.i32(0); w.i32(0); w.i32(0)
        w.i32(1); w.str("i"); w.u8(5); w.str("injury"); w.i32(1); w.i32(1); w.str("")
        w.i32(0); w.i32(0)
        #expect(throws: UserStateDecodingError(user: "u", code: .unknownTag(field: "event category", tag: 5))) {
            try UserStateCodec.decode(user: "u", w.bytes)
        }
        for (provenance, method, field, tag): (UInt8, UInt8, String, UInt8) in [(9, 0, "daily input provenance", 9), (255, 3, "percentile method", 3)] {
            var w = UserStateCodec.Writer()
            w.i32(UserStateCodec.v3Marker); w.str("UTC"); w.u8(0); w.optI32(nil); w.optI32(nil)
            w.i32(1); w.u8(MetricKind.walkingSpeed.rawValue); w.u8(provenance); w.u8(0); w.f64(95); w.u8(method)
            w.i32(0); w.i32(0); w.i32(0); w.i32(0); w.i32(0)
            #expect(throws: UserStateDecodingError(user: "u", code: .unknownTag(field: field, tag: tag))) {
                try UserStateCodec.decode(user: "u", w.bytes)
            }
        }
        var f = UserStateCodec.Writer()
        f.i32(UserStateCodec.v3Marker); f.str("UTC"); f.u8(3)  // 2 is a profile with care teams
        #expect(throws: UserStateDecodingError(user: "u", code: .unknownTag(field: "profile flag", tag: 3))) {
            try UserStateCodec.decode(user: "u", f.bytes)
        }
    }

    /// The store refuses to load rather than hand the daemon a guess (the daemon exits 1 then).
    @Test func aStoreWithACorruptedAlertStateRefusesToLoad() throws {
        let path = TemporaryPath.make("mw-strict", suffix: ".sqlite")
        defer { for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) } }
        do {
            let p = try #require(Checker.check(text: "series s = mean(walkingSpeed)\nalert slow { when s < 1 m/s }").program)
            var e = Engine(program: p)
            var out: [EngineOutput] = []
            let t = Timestamp(seconds: 20_500 * 86_400 + 36_000)
            e.ingest(Sample(id: "a", metric: .walkingSpeed, value: 0.5, start: t, end: t), user: "patient-7", now: t, into: &out)
            e.advance(to: t.adding(seconds: 2 * 86_400), into: &out)
            #expect(e.state(of: "patient-7")!.alerts["slow"]?.isFiring == true)
            let store = try StateStore(path: path)
            _ = try store.commit(users: [.init(user: "patient-7", appliedSeq: 1, eventNow: nil, state: e.changes(of: "patient-7"))], outbox: [])
            #expect(try store.load().users.first?.state?.restored.alerts["slow"]?.isFiring == true)
        }
        // Corrupt the firing tag (2) of the one alert state, as a disk or a newer build could.
        #expect(try StoredStateTampering.setAlertStateTag(database: path, user: "patient-7", rule: "slow", to: 3) == 2)

        let e = try #require(throws: UserStateDecodingError.self) { try StateStore(path: path).load() }
        #expect(e.user == "patient-7" && e.code == .unknownTag(field: "alert state of rule slow", tag: 3))
    }
}
