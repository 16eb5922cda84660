import CareReports
import Foundation
import MobilityModel
import RuleLanguage
import Simulator
import StateStore
import TestSupport
import Testing

/// History: a live mobilityd keeps every series point (a revised day replacing its
/// earlier value), every alert transition and every timeline entry in its state store, in the
/// same commits as the outputs. Checked against what the daemon published on the broker. (Series
/// off the wire and history off, in-process: ``ShardHistoryTests``.)
@Suite(.serialized) struct HistoryRecordingTests {
    @Test func theStoreKeepsWhatTheDaemonPublished() throws {
        // The plateau story alerts; the heat-wave story has an annotation on its timeline.
        let stories: [BuiltinScenario] = [.jamiePlateau, .jamieHeatWave]
        let records = stories.flatMap { $0.generator(seed: 3).generate().map(\.record) }
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-history")
        defer { try? FileManager.default.removeItem(atPath: state) }
        var daemon: DaemonUnderTest? = try DaemonUnderTest(broker: broker, state: state)
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/series/#", "mobility/v1/users/+/alerts/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for r in records { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon!.waitProcessed(records.count, timeout: 60))
        #expect(daemon!.waitIdle())
        #expect(try rec.barrier())
        #expect(daemon!.process.stop() == 0)
        daemon = nil

        // What the broker delivered, folded independently: the last value of each (series, day).
        var publishedBy: [String: [String: [DayNumber: Double?]]] = [:]
        var transitionsBy: [String: [String: [String]]] = [:]  // user → alert id → statuses in order
        for m in rec.messages() where !m.payload.isEmpty {
            guard case .success(let v) = JSONValue.parse(m.payload), case .string(let user)? = v["user"] else { Issue.record("not JSON: \(m.text)"); continue }
            if m.topic.hasSuffix("/series") {
                guard let day = DailySeries.parse(m.payload) else { Issue.record("not a day's series: \(m.text)"); continue }
                for p in day.points {
                    let value = p.value.map { (MeasureUnit.rule(p.unit) ?? .one).si($0) }  // the history is in SI
                    publishedBy[user, default: [:]][p.name, default: [:]][p.day.dayNumber] = .some(value)
                }
            } else if case .string(let id)? = v["id"], case .string(let status)? = v["status"] {
                transitionsBy[user, default: [:]][id, default: []].append(status)
            }
        }
        #expect(!(transitionsBy[BuiltinScenario.jamiePlateau.rawValue] ?? [:]).isEmpty, "the plateau story alerts")

        let store = try StateStore(path: state + "/state.sqlite")
        #expect(try store.historyUsers() == stories.map(\.rawValue).sorted())
        for story in stories {
            let user = story.rawValue, published = publishedBy[user] ?? [:], transitions = transitionsBy[user] ?? [:]
            #expect(published.count >= 5, "series published: \(published.keys.sorted())")
            let h = try store.history(of: user, from: .min, through: .max)
            #expect(h.series.count == published.count)
            for (name, days) in published {
                let kept = h.series[name] ?? [:]
                #expect(kept.count == days.count, "\(name): \(kept.count) days kept, \(days.count) published")
                for (d, v) in days {
                    // The store keeps full precision; the wire rounds to 1e-6.
                    switch (kept[d], v) {
                    case (.some(.some(let a)), .some(let b)): #expect(abs(a - b) <= 1e-6, "\(name) on day \(d): \(a) vs \(b)")
                    case (.some(.none), .none): break
                    default: Issue.record("\(name) on day \(d): kept \(String(describing: kept[d])), published \(String(describing: v))")
                    }
                }
            }
            #expect(Set(h.alerts.map(\.id)) == Set(transitions.keys))
            for e in h.alerts {
                let resolved = transitions[e.id]?.last == "resolved"
                #expect((e.endedDay != nil) == resolved, "episode \(e.rule) \(e.id)")
                #expect(e.endedDay.map { $0 >= e.firedDay } ?? true)
            }
            // The story's injury and heat wave, as the events topic sent them.
            if story == .jamieHeatWave {
                #expect(h.timeline.map(\.kind).sorted() == ["heat_wave", "injury"])
                #expect(h.timeline.first { $0.kind == "heat_wave" }.map { $0.lastDay > $0.firstDay } == true)
            } else {
                #expect(h.timeline.map(\.kind) == ["injury"])
            }
        }
    }

    /// A week closes with its Sunday: mobilityd builds the digest from its history, keeps it and
    /// publishes it retained on `users/{u}/reports/weekly`. Each published digest equals the one
    /// built offline from what the daemon published (series, alerts) and the story's timeline.
    @Test func weeklyReportsArePublishedRetainedAndKept() throws {
        let story = BuiltinScenario.jamiePlateau, user = story.rawValue
        let records = story.generator(seed: 5).generate().map(\.record)
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-history")
        defer { try? FileManager.default.removeItem(atPath: state) }
        var daemon: DaemonUnderTest? = try DaemonUnderTest(broker: broker, state: state)
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/series/#", "mobility/v1/users/+/alerts/#", "mobility/v1/users/+/reports/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for r in records { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon!.waitProcessed(records.count, timeout: 60))
        #expect(daemon!.waitIdle())
        #expect(try rec.barrier())
        let built = daemon!.metric("mobilityd_weekly_reports_total") ?? 0
        #expect(daemon!.process.stop() == 0)
        daemon = nil

        let reports = rec.messages(prefix: "mobility/v1/users/\(user)/reports/weekly").compactMap { try? WeeklyDigest.decode($0.payload).get() }
        // 90 days hold 12 complete weeks at least; every closed Sunday gives one report.
        #expect(reports.count >= 12 && Double(reports.count) == built, "\(reports.count) reports, metric \(built)")
        #expect(reports.map(\.week) == reports.map(\.week).sorted() && Set(reports.map(\.week)).count == reports.count)

        var series: [SeriesPoint] = [], transitions: [AlertTransition] = []
        for m in rec.messages() where !m.payload.isEmpty {
            if m.topic.hasSuffix("/series") {
                guard let day = DailySeries.parse(m.payload) else { continue }
                series += day.points.map {
                    var p = $0; p.revised = false; return p
                }
            } else if m.topic.contains("/alerts/"), let a = AlertTransition.parse(m.payload) {
                transitions.append(a)
            }
        }
        let store = try StateStore(path: state + "/state.sqlite")
        let timeline = try store.history(of: user, from: .min, through: .max).timeline
        #expect(timeline.map(\.kind) == ["injury"])
        /// What had been published when the week closed (later reminders update an alert's summary).
        func offline(through sunday: DayNumber) -> UserHistory {
            var h = UserHistory(user: user)
            for p in series where p.day.dayNumber <= sunday { h.record(p) }
            for a in transitions where a.day.dayNumber <= sunday { h.record(a) }
            for e in timeline { h.record(e) }
            return h
        }
        let (program, diagnostics) = Checker.check(RuleSet.load([RepoPaths.rules]).sources)
        #expect(!diagnostics.contains { $0.severity == .error })
        let spec = ReportSpec(try #require(program?.report))
        for r in reports {
            let expected = WeeklyDigest.make(history: offline(through: r.week.sunday), spec: spec, week: r.week)
            // The offline history holds the wire's values (rounded to 1e-6), the daemon's full
            // precision: equal up to the last digits.
            guard case .success(let a) = JSONValue.parse(Array(expected.json.utf8)), case .success(let b) = JSONValue.parse(Array(r.json.utf8)) else {
                Issue.record("not JSON"); continue
            }
            #expect(nearlyEqual(a, b), "week \(r.week):\n\(expected.json)\n\(r.json)")
        }
        // Kept in the store too, the latest first.
        #expect(try store.reportWeeks(of: user) == reports.map(\.week.description).reversed())
        #expect(try store.dueReports().isEmpty)
        // The injury's week and the weeks after carry a baseline; the speed panel is in mph.
        let late = try #require(reports.last)
        #expect(late.metrics.first?.unit.symbol == "mph" && late.metrics.first?.baseline != nil)
    }
}

/// JSON values equal but for numbers within 1e-5 (relative, or absolute near zero).
func nearlyEqual(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case let (.number(x), .number(y)): return abs(x - y) <= 1e-5 * max(1, abs(x), abs(y))
    case let (.array(x), .array(y)): return x.count == y.count && zip(x, y).allSatisfy { nearlyEqual($0, $1) }
    case let (.object(x), .object(y)):
        return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && nearlyEqual($0.1, $1.1) }
    default: return a == b
    }
}
