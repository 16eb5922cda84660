import Foundation
import MobilityFHIR
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

/// The FHIR mapping, checked by the independent validator (fhir.resources, R4 4.0.1) and by
/// reading the JSON back: Flags of every kind of transition, Observations of every kind of series,
/// a Bundle; and proof that the validator rejects broken resources.
@Suite struct FHIRResourceTests {
    static let since = Timestamp(seconds: 1_772_524_800)

    static func transition(_ status: AlertStatus, user: String = "jamie", repeating: Bool = false) -> AlertTransition {
        var a = AlertTransition(
            id: AlertTransition.stableID(rule: "stalled_recovery", user: user, activeSince: since), rule: "stalled_recovery", user: user,
            severity: .warning, status: status, activeSince: since, firedAt: since.adding(seconds: 3 * 86_400),
            resolvedAt: status == .resolved ? since.adding(seconds: 9 * 86_400) : nil, day: CivilDate(year: 2026, month: 3, day: 12),
            headline: "Recovery stalled since 2026-03-03: 2.2 mph vs 2.9 mph before injury", details: "7-day walking speed 0.99 m/s",
            labels: [("category", "recovery"), ("team", "physio-north")],
            evidence: [
                Evidence(name: "recent", value: 0.99, unit: "m/s"), Evidence(name: "trend", value: nil, unit: "m/s/d"),
                Evidence(name: "gait_improving", value: 0, unit: "bool"), Evidence(name: "source", text: "com.apple.health")
            ], annotations: [], isRepeat: repeating,
            // Los Angeles: active since the start of 03-03 (08:00Z), fired at the end of 03-05
            activeSinceDay: CivilDate(year: 2026, month: 3, day: 3), firedDay: CivilDate(year: 2026, month: 3, day: 5))
        if status == .expired {
            a.expiredAt = since.adding(seconds: 9 * 86_400)
            a.reason = AlertTransition.windowEnded
        }
        if status == .firing, repeating { a.acknowledged = AlertAcknowledgement(by: "nurse-kim", at: since.adding(seconds: 4 * 86_400), note: "called") }
        return a
    }

    static let rules = """
        series speed_p95 = p95(walkingSpeed, source: device)
        series speed_7d = mean(speed_p95, 7 d, min: 4)
        series speed_samples = count(walkingSpeed)
        series six_minute_walk_clinic = last(sixMinuteWalkTestDistance, source: user_entered)
        series vo2 = max(vo2Max)
        series speed_trend = slope(speed_7d, 14 d, min: 10)
        """

    static func program() throws -> Program {
        let (p, d) = Checker.check([SourceFile(path: "fhir.rules", text: rules)])
        return try #require(p, "\(d)")
    }

    static func object(_ json: String) throws -> JSONValue {
        guard case .success(let v) = JSONValue.parse(Array(json.utf8)) else { throw HarnessError("not JSON: \(json)") }
        return v
    }

    @Test func flagsOfEveryTransitionAreValidR4() throws {
        var withdrawn = Self.transition(.resolved)
        withdrawn.reason = AlertTransition.revised
        withdrawn.headline = AlertTransition.withdrawnHeadline
        let flags = [
            Self.transition(.firing), Self.transition(.firing, repeating: true), Self.transition(.resolved), Self.transition(.firing, user: "pat_7"),
            Self.transition(.expired), withdrawn
        ]
        let verdict = try FHIRValidator.validate(flags.map(FlagResource.json))
        #expect(verdict.valid, "\(verdict.output)")
        let firing = try Self.object(FlagResource.json(flags[0])), resolved = try Self.object(FlagResource.json(flags[2]))
        #expect(firing["status"] == .string("active"))
        #expect(resolved["status"] == .string("inactive"))
        #expect(firing["id"] == resolved["id"])  // one resource per alert instance: a resolution updates it
        // The period and the firing are the user's local days, the dates every view shows.
        #expect(firing["period"]?["start"] == .string("2026-03-03") && firing["period"]?["end"] == nil)
        #expect(resolved["period"]?["end"] == .string("2026-03-12"))
        #expect(firing["code"]?["text"] == .string(flags[0].headline))
        // An expiry ends the Flag too, but says it was not a resolution, and why.
        let expired = try Self.object(FlagResource.json(flags[4]))
        #expect(expired["status"] == .string("inactive") && expired["id"] == firing["id"])
        #expect(expired["period"]?["end"] == .string("2026-03-12"))
        func ext(_ flag: JSONValue, _ name: String) -> JSONValue? {
            guard case .array(let all)? = flag["extension"] else { return nil }
            return all.first { $0["url"] == .string("urn:mobilitywatch:fhir:" + name) }
        }
        #expect(ext(expired, "alert-outcome")?["valueCode"] == .string("expired"))
        // A withdrawn alert was raised in error: late data or a late timeline entry showed it did not hold.
        let error = try Self.object(FlagResource.json(flags[5]))
        #expect(error["status"] == .string("entered-in-error") && error["id"] == firing["id"])
        #expect(ext(error, "alert-reason")?["valueString"] == .string("revised"))
        #expect(ext(expired, "alert-reason")?["valueString"] == .string("window_ended"))
        #expect(ext(resolved, "alert-outcome")?["valueCode"] == .string("resolved") && ext(resolved, "alert-reason") == nil)
        #expect(ext(firing, "alert-outcome") == nil)
        #expect(ext(firing, "alert-fired-at")?["valueDateTime"] == .string("2026-03-05"))
        #expect(ext(firing, "alert-details")?["valueString"] == .string("7-day walking speed 0.99 m/s"))
        #expect(firing["subject"]?["reference"] == .string("Patient/jamie"))
        // A user id that is not a FHIR id is referred to by identifier only.
        let underscored = try Self.object(FlagResource.json(flags[3]))
        #expect(underscored["subject"]?["reference"] == nil)
        #expect(underscored["subject"]?["identifier"]?["value"] == .string("pat_7"))
        #expect(
            FlagResource.json(flags[0]).contains(
                "\"valueQuantity\":{\"value\":0.99,\"unit\":\"m/s\",\"system\":\"http://unitsofmeasure.org\",\"code\":\"m/s\"}"))
    }

    @Test func observationsOfEveryKindOfSeriesAreValidR4() throws {
        let meanings = SeriesMeaning.of(try Self.program())
        let day = CivilDate(year: 2026, month: 3, day: 6)
        let points: [(SeriesPoint, String?)] = [
            (SeriesPoint(user: "jamie", name: "speed_p95", day: day, value: 1.31, unit: "m/s"), "HKQuantityTypeIdentifierWalkingSpeed"),
            (SeriesPoint(user: "jamie", name: "speed_7d", day: day, value: 2.9, unit: "mph"), "HKQuantityTypeIdentifierWalkingSpeed"),
            (SeriesPoint(user: "jamie", name: "speed_samples", day: day, value: 17, unit: ""), nil),
            (SeriesPoint(user: "jamie", name: "six_minute_walk_clinic", day: day, value: 412, unit: "m"), "64098-7"),
            (SeriesPoint(user: "jamie", name: "vo2", day: day, value: 31.5, unit: "ml/(kg*min)"), "HKQuantityTypeIdentifierVO2Max"),
            (SeriesPoint(user: "jamie", name: "speed_trend", day: day, value: 0.002, unit: "m/s/d"), nil),
            (SeriesPoint(user: "jamie", name: "speed_p95", day: day, value: nil, unit: "m/s", revised: true), "HKQuantityTypeIdentifierWalkingSpeed")
        ]
        var texts: [String] = []
        for (p, code) in points {
            let text = try #require(ObservationResource.json(p, meaning: meanings[p.name]))
            texts.append(text)
            let codes = try Self.object(text)["code"]?["coding"]
            guard case .array(let codings)? = codes else { Issue.record("no codings: \(text)"); continue }
            let values = codings.compactMap { if case .string(let s)? = $0["code"] { s } else { nil } }
            if let code { #expect(values.contains(code), "\(p.name): \(values)") } else { #expect(values == [p.name], "\(p.name): \(values)") }
        }
        let verdict = try FHIRValidator.validate(texts)
        #expect(verdict.valid, "\(verdict.output)")
        let weekly = try Self.object(texts[1])
        #expect(weekly["effectivePeriod"]?["start"] == .string("2026-02-28"))
        #expect(weekly["valueQuantity"]?["code"] == .string("[mi_i]/h"))
        #expect(try Self.object(texts[0])["effectiveDateTime"] == .string("2026-03-06"))
        #expect(try Self.object(texts[6])["status"] == .string("amended"))
        // A missing day that revises nothing is not an Observation.
        #expect(ObservationResource.json(SeriesPoint(user: "jamie", name: "speed_p95", day: day, value: nil, unit: "m/s"), meaning: nil) == nil)
    }

    @Test func thePublishedBytesAreTheGoldenOnes() throws {
        // Golden/resources.jsonl holds the published bytes of two Flags and two Observations; the
        // bytes written directly and the text are the same, byte for byte. Regenerate with
        // UPDATE_GOLDEN=1 after a deliberate change of the mapping, and review the diff.
        let path = RepoPaths.root + "/Tests/MobilityFHIRTests/Golden/resources.jsonl"
        let meanings = SeriesMeaning.of(try Self.program())
        let day = CivilDate(year: 2026, month: 3, day: 6)
        let weekly = SeriesPoint(user: "jamie", name: "speed_7d", day: day, value: 2.9, unit: "mph")
        let gone = SeriesPoint(user: "jamie", name: "speed_p95", day: day, value: nil, unit: "m/s", revised: true)
        let bytes = [
            FlagResource.jsonBytes(Self.transition(.firing, repeating: true)), FlagResource.jsonBytes(Self.transition(.resolved, user: "pat_7")),
            try #require(ObservationResource.jsonBytes(weekly, meaning: meanings["speed_7d"])),
            try #require(ObservationResource.jsonBytes(gone, meaning: meanings["speed_p95"]))
        ]
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] != nil {
            try (bytes.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        }
        let golden = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { Array($0.utf8) }
        #expect(golden.count == 4)
        for (b, g) in zip(bytes, golden) { #expect(b == g, "\(String(decoding: b, as: UTF8.self))") }
        #expect(FlagResource.json(Self.transition(.firing, repeating: true)) == String(decoding: golden[0], as: UTF8.self))
        #expect(ObservationResource.json(weekly, meaning: meanings["speed_7d"]) == String(decoding: golden[2], as: UTF8.self))
        #expect(ObservationResource.jsonBytes(SeriesPoint(user: "jamie", name: "speed_p95", day: day, value: nil, unit: "m/s"), meaning: nil) == nil)
    }

    /// Timeline entries: a staff-entered injury (SNOMED CT coded, the performer and `issued` its
    /// attribution), a gateway's annotation over days, a kind without a SNOMED CT concept, and a
    /// retracted entry (`entered-in-error`, the same resource id).
    @Test func timelineEntriesAreValidR4Observations() throws {
        let d = CivilDate(year: 2026, month: 2, day: 1).dayNumber
        let injury = TimelineEvent(
            id: "inj_1", category: .clinical, kind: "injury", firstDay: d, lastDay: d, note: "fell on the stairs <b>",
            entered: EntryAttribution(by: "nurse.kim", team: "physio-north", at: Self.since))
        let illness = TimelineEvent(id: "ill-1", category: .annotation, kind: "illness", firstDay: d + 3, lastDay: d + 9)
        let stroke = TimelineEvent(
            id: "s", category: .clinical, kind: "stroke", firstDay: d, lastDay: d, entered: EntryAttribution(by: "dr.lee", team: "", at: Self.since))
        let texts = [
            TimelineObservation.jsonBytes(injury, user: "jamie"), TimelineObservation.jsonBytes(illness, user: "jamie_2"),
            TimelineObservation.jsonBytes(stroke, user: "jamie"), TimelineObservation.jsonBytes(injury, user: "jamie", retracted: true)
        ].map { String(decoding: $0, as: UTF8.self) }
        let verdict = try FHIRValidator.validate(texts)
        #expect(verdict.valid, "\(verdict.output)")
        let v = try #require(try? JSONValue.parse(texts[0]).get())
        #expect(v["status"] == .string("final") && v["issued"] == .string(Self.since.description))
        #expect(v["effectiveDateTime"] == .string("2026-02-01") && v["performer"] == .array([.object([("display", .string("nurse.kim (physio-north)"))])]))
        #expect(texts[0].contains(#"{"system":"http://snomed.info/sct","code":"417746004","display":"Traumatic injury"}"#))
        #expect(texts[0].contains(#""note":[{"text":"fell on the stairs <b>"}]"#))
        let annotation = try #require(try? JSONValue.parse(texts[1]).get())
        #expect(annotation["effectivePeriod"] == .object([("start", .string("2026-02-04")), ("end", .string("2026-02-10"))]))
        #expect(annotation["performer"] == nil && annotation["issued"] == nil, "a gateway's entry names no staff")
        #expect(!texts[2].contains("snomed") && texts[2].contains(#""code":"stroke""#))
        let retracted = try #require(try? JSONValue.parse(texts[3]).get())
        #expect(retracted["status"] == .string("entered-in-error") && retracted["id"] == v["id"])
    }

    @Test func aBundleOfFlagsAndObservationsIsValidR4() throws {
        var b = FHIRBundle()
        b.add(Self.transition(.resolved))
        b.add(SeriesPoint(user: "jamie", name: "speed_p95", day: CivilDate(year: 2026, month: 3, day: 6), value: 1.2, unit: "m/s"), meaning: nil)
        let verdict = try FHIRValidator.validate([b.json])
        #expect(verdict.valid, "\(verdict.output)")
        #expect(try Self.object(b.json)["type"] == .string("collection"))
    }

    /// The validator validates: each deliberately broken resource is rejected, with its reason.
    @Test(arguments: [
        ("Flag without subject", #"{"resourceType":"Flag","status":"active","code":{"text":"x"}}"#, "subject"),
        ("Flag with an unknown status", #"{"resourceType":"Flag","status":"firing","code":{"text":"x"},"subject":{"reference":"Patient/a"}}"#, "status"),
        (
            "Flag with an id FHIR forbids", #"{"resourceType":"Flag","id":"pat_7","status":"active","code":{"text":"x"},"subject":{"reference":"Patient/a"}}"#,
            "id"
        ),
        (
            "Observation on a day that does not exist",
            #"{"resourceType":"Observation","status":"final","code":{"text":"x"},"effectiveDateTime":"2026-02-30"}"#, "effectiveDateTime"
        ),
        ("Observation with an unknown element", #"{"resourceType":"Observation","status":"final","code":{"text":"x"},"day":"2026-03-06"}"#, "day"),
        (
            "extension with both a value and extensions",
            #"{"resourceType":"Flag","status":"active","code":{"text":"x"},"subject":{"reference":"Patient/a"},"extension":[{"url":"urn:x","valueString":"a","extension":[{"url":"b","valueString":"c"}]}]}"#,
            "ext-1"
        )
    ])
    func theValidatorRejectsBrokenResources(_ c: (String, String, String)) throws {
        let verdict = try FHIRValidator.validate([c.1])
        #expect(!verdict.valid, "\(c.0) was accepted: \(verdict.output)")
        #expect(verdict.output.contains(c.2), "\(c.0): \(verdict.output)")
    }
}
