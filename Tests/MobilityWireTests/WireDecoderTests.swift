import MobilityModel
import MobilityWire
import TestSupport
import Testing

private func sampleJSON(_ overrides: [String: String] = [:], drop: Set<String> = []) -> String {
    var fields: [(String, String)] = [
        ("id", "\"s1\""), ("type", "\"walkingSpeed\""), ("value", "1.25"), ("unit", "\"m/s\""),
        ("start", "\"2026-03-01T08:15:00-08:00\""), ("end", "\"2026-03-01T08:15:30-08:00\""),
        ("source", "{\"bundleId\":\"com.apple.health.81F2\",\"name\":\"iPhone\"}")
    ]
    for (k, v) in overrides { if let i = fields.firstIndex(where: { $0.0 == k }) { fields[i].1 = v } else { fields.append((k, v)) } }
    return "{" + fields.filter { !drop.contains($0.0) }.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
}

@Suite struct WireDecoderTests {
    let decoder = WireDecoder(maxPayloadBytes: 4096, maxBatch: 10)

    func one(_ json: String, user: String = "jamie") -> Result<Sample, Rejection> {
        switch decoder.samples(Array(json.utf8), user: user) {
        case .failure(let r): return .failure(r)
        case .success(let items): return items[0]
        }
    }

    @Test func decodesAValidSample() throws {
        let s = try one(sampleJSON()).get()
        #expect(s.id == "s1" && s.metric == .walkingSpeed && s.value == 1.25)
        #expect(s.provenance == .device)
        #expect(s.utcOffset == -28_800)
    }

    @Test(arguments: [
        ("mi/hr", 2.52774, 2.52774 * 0.44704), ("km/hr", 4.5, 1.25), ("m/s", 1.1, 1.1)
    ])
    func normalisesSpeedUnits(unit: String, value: Double, si: Double) throws {
        let s = try one(sampleJSON(["unit": "\"\(unit)\"", "value": "\(value)"])).get()
        #expect(abs(s.value - si) < 1e-12)
    }

    @Test func normalisesHealthKitUnits() throws {
        let ds = try one(sampleJSON(["type": "\"HKQuantityTypeIdentifierWalkingDoubleSupportPercentage\"", "unit": "\"%\"", "value": "0.294"])).get()
        #expect(ds.metric == .walkingDoubleSupportPercentage && ds.value == 0.294)
        let step = try one(sampleJSON(["type": "\"walkingStepLength\"", "unit": "\"in\"", "value": "25"])).get()
        #expect(abs(step.value - 0.635) < 1e-12)
        let vo2 = try one(sampleJSON(["type": "\"HKQuantityTypeIdentifierVO2Max\"", "unit": "\"mL/min·kg\"", "value": "33.09"])).get()
        #expect(abs(MeasureUnit.vo2.fromSI(vo2.value) - 33.09) < 1e-9)
    }

    @Test(arguments: [
        ("HKWasUserEntered", "\"1\""), ("HKMetadataKeyWasUserEntered", "true"), ("HKWasUserEntered", "1")
    ])
    func userEnteredForms(key: String, value: String) throws {
        let s = try one(sampleJSON(["metadata": "{\"\(key)\":\(value)}"])).get()
        #expect(s.provenance == .userEntered)
    }

    @Test func metadataKeysInEitherSpellingFirstOneWins() throws {
        // The zone in the short export spelling, then repeated in the long one (ignored); the
        // user-entered flag twice with opposite values (the first wins, for the flag as for the
        // stored metadata); an unknown key kept as written.
        let s = try one(
            sampleJSON([
                "metadata":
                    #"{"HKTimeZone":"Asia/Tokyo","HKMetadataKeyTimeZone":"Europe/Paris","HKWasUserEntered":"1","HKMetadataKeyWasUserEntered":"0","clinicNote":"x"}"#
            ])
        ).get()
        #expect(s.timeZone == "Asia/Tokyo")
        #expect(s.provenance == .userEntered)
        #expect(s.metadata == ["HKMetadataKeyTimeZone": .string("Asia/Tokyo"), "HKMetadataKeyWasUserEntered": .string("1"), "clinicNote": .string("x")])
        let t = try one(sampleJSON(["metadata": #"{"HKMetadataKeyTimeZone":"America/Denver","HKMetadataKeyAppleDeviceCalibrated":true}"#])).get()
        #expect(t.timeZone == "America/Denver" && t.calibrated == true && t.provenance == .device)
    }

    @Test func nonAppleSourceIsUserEntered() throws {
        let s = try one(sampleJSON(["source": "{\"bundleId\":\"org.example.clinic\"}"])).get()
        #expect(s.provenance == .userEntered)
    }

    @Test func calibratedAndSyncMetadata() throws {
        let s = try one(
            sampleJSON([
                "type": "\"sixMinuteWalkTestDistance\"", "unit": "\"m\"", "value": "500",
                "metadata": "{\"HKMetadataKeyAppleDeviceCalibrated\":\"0\",\"HKMetadataKeySyncIdentifier\":\"X\",\"HKMetadataKeySyncVersion\":2}"
            ])
        ).get()
        #expect(s.calibrated == false)
        #expect(s.syncIdentifier == "X" && s.syncVersion == 2)
    }

    @Test(arguments: [
        (sampleJSON(drop: ["value"]), RejectionReason.missingField),
        (sampleJSON(["value": "\"fast\""]), .invalidField),
        (sampleJSON(["value": "\"NaN\""]), .notFinite),
        (sampleJSON(["value": "1e999"]), .notFinite),
        (sampleJSON(["value": "-0.5"]), .outOfRange),
        (sampleJSON(["value": "42"]), .outOfRange),
        (sampleJSON(["type": "\"heartRate\""]), .unknownType),
        (sampleJSON(["unit": "\"furlong/fortnight\""]), .unknownUnit),
        (sampleJSON(["unit": "\"%\""]), .unitMismatch),
        (sampleJSON(["end": "\"2026-03-01T08:00:00-08:00\""]), .endBeforeStart),
        (sampleJSON(["start": "\"yesterday\""]), .invalidField),
        (sampleJSON(["user": "\"someone-else\""]), .userMismatch),
        (sampleJSON(["timeZone": "\"Mars/Olympus\""]), .invalidTimeZone),
        (sampleJSON(drop: ["id"]), .missingField),
        ("[1,2", .notJSON),
        ("", .notJSON),
        (String(repeating: "[", count: 100) + String(repeating: "]", count: 100), .notJSON),
        ("{\"id\":\"" + String(repeating: "x", count: 5000) + "\"}", .payloadTooLarge),
        ("[" + Array(repeating: sampleJSON(), count: 11).joined(separator: ",") + "]", .tooManyItems)
    ])
    func rejectsWithReason(json: String, reason: RejectionReason) {
        guard case .failure(let r) = one(json) else { Issue.record("accepted: \(json.prefix(80))"); return }
        #expect(r.reason == reason, "\(r)")
        #expect(!r.detail.isEmpty)
    }

    @Test func oneBadSampleInABatchRejectsOnlyThatSample() throws {
        let batch = "[" + sampleJSON() + "," + sampleJSON(["id": "\"s2\"", "value": "-3"]) + "," + sampleJSON(["id": "\"s3\""]) + "]"
        let items = try decoder.samples(Array(batch.utf8), user: "jamie").get()
        #expect(items.count == 3)
        #expect((try? items[0].get()) != nil && (try? items[2].get()) != nil)
        guard case .failure(let r) = items[1] else { Issue.record("s2 accepted"); return }
        #expect(r.reason == .outOfRange && r.index == 1 && r.itemID == "s2")
    }

    @Test func invalidUTF8IsNotJSON() {
        var bytes = Array(sampleJSON().utf8)
        bytes.insert(0xFF, at: 8)
        guard case .failure(let r) = decoder.samples(bytes, user: "jamie") else { Issue.record("accepted"); return }
        #expect(r.reason == .notJSON)
    }

    @Test func eventsAndDeletionsAndProfile() throws {
        let ev = try decoder.events(
            Array(#"[{"id":"e1","kind":"injury","date":"2026-02-01"},{"id":"a1","kind":"heat_wave","start":"2026-03-01","end":"2026-03-05"}]"#.utf8), user: "u"
        ).get()
        guard case .record(let e1) = try ev[0].get(), case .record(let a1) = try ev[1].get() else { Issue.record("not entries: \(ev)"); return }
        #expect(e1.category == .clinical && e1.firstDay == CivilDate(year: 2026, month: 2, day: 1).dayNumber)
        #expect(a1.category == .annotation && a1.lastDay - a1.firstDay == 4)
        #expect(try decoder.deletions(Array(#"{"ids":["a","b"]}"#.utf8)).get() == ["a", "b"])
        #expect(try decoder.profile(Array(#"{"timeZone":"Europe/Zurich"}"#.utf8)).get().identifier == "Europe/Zurich")
        guard case .failure(let r) = decoder.profile(Array(#"{"timeZone":"Nowhere/City"}"#.utf8)) else { Issue.record("accepted"); return }
        #expect(r.reason == .invalidTimeZone)
    }

    /// An entry's note is kept whole or refused with the reason: never cut short (a note of
    /// 1 001 characters was once kept as its first 1 000), and never dropped for its type.
    @Test func aNoteIsKeptWholeOrRefused() throws {
        func entry(_ note: String) -> Result<TimelineChange, Rejection> {
            let payload = #"{"id":"a1","kind":"pain","category":"annotation","date":"2026-03-01","note":"# + note + "}"
            guard case .success(let items) = decoder.events(Array(payload.utf8), user: "u"), items.count == 1 else { return .failure(Rejection(.notJSON, "?")) }
            return items[0]
        }
        let longest = String(repeating: "é", count: TimelineEvent.maxNoteBytes / 2)  // 1 000 bytes
        guard case .success(.record(let kept)) = entry("\"" + longest + "\"") else { Issue.record("refused"); return }
        #expect(kept.note == longest)
        for (note, says) in [("\"" + longest + "x\"", "1001 bytes, over the limit of 1000"), ("42", "must be a string")] {
            guard case .failure(let r) = entry(note) else { Issue.record("accepted \(note.prefix(20))"); continue }
            #expect(r.reason == .invalidField && r.detail.contains(says) && r.itemID == "a1", "\(r.detail)")
        }
        guard case .success(.record(let none)) = entry("null") else { Issue.record("refused null"); return }
        #expect(none.note == nil)
    }

    /// Each deleted id costs a tombstone in the user's state: one message deletes at most a
    /// batch's worth, however the ids are wrapped.
    @Test func aDeletionHoldsAtMostABatchOfIds() throws {
        let decoder = WireDecoder(maxBatch: 3)
        #expect(try decoder.deletions(Array(#"{"ids":["a","b","c"]}"#.utf8)).get().count == 3)
        for payload in [#"{"ids":["a","b","c","d"]}"#, #"[{"ids":["a","b"]},{"ids":["c","d"]}]"#] {
            guard case .failure(let r) = decoder.deletions(Array(payload.utf8)) else { Issue.record("accepted \(payload)"); continue }
            #expect(r.reason == .tooManyItems, "\(payload)")
        }
    }
}

/// The default limits are consistent: a full batch of typical samples fits the payload limit, so
/// each limit is reachable with real items and reported with its own reason.
@Suite struct BatchLimitTests {
    /// A sample as a gateway sends it: long type name, offsets, a source with a device name (~250 B).
    static func typical(_ i: Int) -> String {
        "{\"id\":\"jamie-plateau-\(100_000 + i)-ws\",\"type\":\"HKQuantityTypeIdentifierWalkingSpeed\",\"value\":0.87447,\"unit\":\"m/s\","
            + "\"start\":\"2026-03-31T19:04:25-07:00\",\"end\":\"2026-03-31T19:04:58-07:00\","
            + "\"source\":{\"bundleId\":\"com.apple.health.9C2F5E1A\",\"name\":\"jamie-plateau's iPhone\"}}"
    }
    static func batch(_ n: Int, _ item: (Int) -> String = typical) -> [UInt8] {
        Array(("[" + (0..<n).map(item).joined(separator: ",") + "]").utf8)
    }

    @Test func aFullBatchOfTypicalSamplesFitsAndEachLimitHasItsReason() throws {
        let d = WireDecoder()
        #expect(WireDecoder.defaultMaxBatch * 262 <= WireDecoder.defaultMaxPayloadBytes)
        let full = Self.batch(d.maxBatch)
        #expect(full.count < d.maxPayloadBytes)
        let items = try d.samples(full, user: "jamie").get()
        #expect(items.count == d.maxBatch && items.allSatisfy { if case .success = $0 { true } else { false } })
        // One more typical item: still under the payload limit, refused for its count.
        let over = Self.batch(d.maxBatch + 1)
        #expect(over.count < d.maxPayloadBytes)
        #expect(d.samples(over, user: "jamie").failureReason == .tooManyItems)
        // Samples with metadata (~450 B) reach the payload limit before the item limit.
        let rich = Self.batch(d.maxBatch) { i in
            String(Self.typical(i).dropLast()) + ",\"metadata\":{\"HKMetadataKeyDevicePlacementSide\":2,\"HKWasUserEntered\":\"0\","
                + "\"HKMetadataKeyTimeZone\":\"America/Los_Angeles\",\"HKMetadataKeySyncIdentifier\":\"9C2F5E1A-\(i)\",\"HKMetadataKeySyncVersion\":1}}"
        }
        #expect(rich.count > d.maxPayloadBytes)
        #expect(d.samples(rich, user: "jamie").failureReason == .payloadTooLarge)
    }
}

extension Result where Failure == Rejection {
    /// The rejection's reason, nil on success.
    var failureReason: RejectionReason? { if case .failure(let r) = self { r.reason } else { nil } }
}
