import MobilityModel
import MobilityWire
import TestSupport
import Testing

/// What one payload's items share while they are decoded (`PayloadRepeats`: the date part of
/// their timestamps, their bundle id) never leaks from one item into another: every item of a
/// batch decodes exactly as it does alone.
@Suite struct PayloadRepeatsTests {
    let decoder = WireDecoder(maxPayloadBytes: 256 * 1024, maxBatch: 1000)

    /// One item alone, its rejection without the batch index.
    func alone(_ item: String) -> Result<Sample, Rejection> {
        switch decoder.samples(Array(item.utf8), user: "jamie") {
        case .failure(let r): return .failure(r)
        case .success(let items): return items[0]
        }
    }

    /// Decodes `items` as one batch and expects each to decode exactly as it does alone (its
    /// rejection with its batch index); returns how many were accepted and rejected.
    func expectBatchDecodesAsAlone(_ items: [String], round: Int) throws -> (accepted: Int, rejected: Int) {
        let batch = try decoder.samples(Array(("[" + items.joined(separator: ",") + "]").utf8), user: "jamie").get()
        #expect(batch.count == items.count)
        var accepted = 0, rejected = 0
        for (i, (got, item)) in zip(batch, items).enumerated() {
            switch (got, alone(item)) {
            case (.success(let a), .success(let b)):
                #expect(a == b, "round \(round) item \(i): \(item)")
                #expect(a.provenance == b.provenance && a.calibrated == b.calibrated && a.timeZone == b.timeZone)
                accepted += 1
            case (.failure(let a), .failure(var b)):
                b.index = i
                #expect(a == b, "round \(round) item \(i): \(item)")
                rejected += 1
            default: Issue.record("round \(round) item \(i) differs from alone: \(item)")
            }
        }
        return (accepted, rejected)
    }

    @Test func everyItemOfABatchDecodesAsItDoesAlone() throws {
        var rng = SplitMix64(seed: 18)
        // Bundle ids of one length differing in one byte (first and last), longer and shorter
        // ones, an empty one, a non-string, none: device and user-entered provenance both.
        let sources = [
            #"{"bundleId":"com.apple.health.9C2F5E1A","name":"iPhone"}"#, #"{"bundleId":"com.apple.health.9C2F5E1B"}"#,
            #"{"bundleId":"dom.apple.health.9C2F5E1A"}"#, #"{"bundleId":"com.apple.health.9C2F5E1A.watch"}"#,
            #"{"bundleId":"org.example.clinic"}"#, #"{"bundleId":""}"#, #"{"bundleId":7}"#, #"{"name":"no bundle"}"#, nil
        ]
        // Dates that differ in one byte, invalid ones (a leap day of a common year, month 13),
        // and the other forms the general parser reads.
        let times = [
            "2026-03-01T08:15:00Z", "2026-03-02T08:15:00+01:00", "2025-03-01T08:15:00.250Z", "2024-02-29T23:59:59.999-08:00",
            "2026-02-29T08:15:00Z", "2026-13-01T08:15:00Z", "2026-03-01 08:15:00 -0800", "2026-03-01T08:15:00.5+0100", "2026-03-01T08:15Z"
        ]
        var accepted = 0, rejected = 0
        for round in 0..<40 {
            let items = (0..<Int.random(in: 2...60, using: &rng)).map { i -> String in
                let start = times.randomElement(using: &rng)!
                let end = Bool.random(using: &rng) ? start : times.randomElement(using: &rng)!
                var json = #"{"id":"r\#(round)-\#(i)","type":"walkingSpeed","value":1.2,"unit":"m/s","start":"\#(start)","end":"\#(end)""#
                if let s = sources.randomElement(using: &rng)! { json += #","source":"# + s }
                return json + "}"
            }
            let (a, r) = try expectBatchDecodesAsAlone(items, round: round)
            accepted += a
            rejected += r
        }
        #expect(accepted > 100 && rejected > 100)
    }

    /// Items whose metadata repeats the last item's share its decoded dictionary
    /// (`RepeatedMetadata`): metadata that differ from it in one key, one value, one value's
    /// type or bits, their order or a duplicated key, metadata that are refused, empty or absent
    /// must still decode exactly as each item does alone.
    @Test func sharedMetadataDecodesAsItDoesAlone() throws {
        var rng = SplitMix64(seed: 1802)
        let long = String(repeating: "é", count: 200)  // 400 bytes: cut to 256 characters
        let metadata = [
            #"{"HKMetadataKeyDevicePlacementSide":2}"#, #"{"HKMetadataKeyDevicePlacementSide":3}"#,
            #"{"HKMetadataKeyDevicePlacementSide":2.0}"#, #"{"HKMetadataKeyDevicePlacementSide":-0.0}"#,
            #"{"HKMetadataKeyDevicePlacementSide":"2"}"#, #"{"HKDevicePlacementSide":2}"#,
            #"{"HKTimeZone":"Europe/London"}"#, #"{"HKTimeZone":"Europe/Londom"}"#, #"{"HKTimeZone":"America/New_York","HKMetadataKeyDevicePlacementSide":2}"#,
            #"{"HKMetadataKeyDevicePlacementSide":2,"HKTimeZone":"America/New_York"}"#,
            #"{"HKMetadataKeyAppleDeviceCalibrated":"1"}"#, #"{"HKMetadataKeyAppleDeviceCalibrated":"0"}"#,
            #"{"HKMetadataKeyAppleDeviceCalibrated":true}"#, #"{"HKWasUserEntered":1}"#, #"{"HKWasUserEntered":0}"#,
            #"{"HKWasUserEntered":true,"HKMetadataKeyWasUserEntered":false}"#, #"{"HKWasUserEntered":false,"HKMetadataKeyWasUserEntered":true}"#,
            #"{"note":"caf\u00e9 \"quoted\" \\ tab\t"}"#, #"{"note":"café \"quoted\" \\ tab\t"}"#, #"{"note":"\#(long)"}"#,
            #"{"n\u00f6te":"x"}"#, #"{"nöte":"x"}"#, #"{"HKMetadataKeySyncIdentifier":"s1","HKMetadataKeySyncVersion":2}"#,
            #"{"HKMetadataKeySyncIdentifier":"s1","HKMetadataKeySyncVersion":3}"#, #"{"bad":[1]}"#, #"{"bad":null}"#,
            #"{"ok":1,"bad":{}}"#, #"{}"#, #"[]"#, #""meta""#, nil
        ]
        var accepted = 0, rejected = 0, shared = 0
        for round in 0..<60 {
            var last: String??
            let items = (0..<Int.random(in: 2...60, using: &rng)).map { i -> String in
                // Runs of the same metadata, as a sync sends them, broken at random.
                let m = Int.random(in: 0..<4, using: &rng) > 0 && last != nil ? last! : metadata.randomElement(using: &rng)!
                if last != nil, m == last! { shared += 1 }
                last = m
                var json =
                    #"{"id":"r\#(round)-\#(i)-ü","type":"walkingSpeed","value":1.2,"unit":"m/s","start":"2026-03-01T08:15:00+01:00","end":"2026-03-01T08:15:30+01:00","source":{"bundleId":"com.apple.health.9C2F5E1A"}"#
                if let m { json += #","metadata":"# + m }
                return json + "}"
            }
            let (a, r) = try expectBatchDecodesAsAlone(items, round: round)
            accepted += a
            rejected += r
        }
        #expect(accepted > 300 && rejected > 100 && shared > 300, "\(accepted) accepted, \(rejected) rejected, \(shared) shared")
    }

    /// HealthKit's device keys, in the short spelling too, are stored under the long one.
    @Test func deviceMetadataKeysInEitherSpelling() throws {
        let item =
            #"{"id":"m","type":"walkingSpeed","value":1.2,"unit":"m/s","start":"2026-03-01T08:15:00Z","end":"2026-03-01T08:15:00Z","metadata":{"HKDevicePlacementSide":2,"HKMetadataKeyExternalUUID":"E","HKDeviceName":"Watch"}}"#
        let s = try alone(item).get()
        #expect(
            s.metadata == [
                "HKMetadataKeyDevicePlacementSide": .number(2), "HKMetadataKeyExternalUUID": .string("E"), "HKMetadataKeyDeviceName": .string("Watch")
            ])
    }
}
