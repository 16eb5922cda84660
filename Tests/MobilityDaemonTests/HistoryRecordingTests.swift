import CareReports
import Foundation
import MobilityModel
import Simulator
import StateStore
import Testing
import TestSupport

/// Issue 16, history: a live mobilityd keeps every series point (a revised day replacing its
/// earlier value), every alert transition and every timeline entry in its state store, in the
/// same commits as the outputs. Checked against what the daemon published on the broker.
@Suite(.serialized) struct HistoryRecordingTests {
    @Test func theStoreKeepsWhatTheDaemonPublished() throws {
        // The plateau story alerts; the heat-wave story has an annotation on its timeline.
        let stories: [BuiltinScenario] = [.jamiePlateau, .jamieHeatWave]
        let records = stories.flatMap { $0.generator(seed: 3).generate().map(\.record) }
        let broker = try MosquittoBroker()
        let state = NSTemporaryDirectory() + "mw-history-\(UUID().uuidString.prefix(8))"
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
            if m.topic.contains("/series/") {
                guard case .string(let name)? = v["series"], case .string(let d)? = v["day"], let day = CivilDate(parsing: Substring(d)) else { continue }
                var value: Double?
                if case .number(let n)? = v["value"], case .string(let u)? = v["unit"] { value = (MeasureUnit.rule(u) ?? .one).si(n) }  // the history is in SI
                publishedBy[user, default: [:]][name, default: [:]][day.dayNumber] = .some(value)
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
            #expect((e.resolvedDay != nil) == resolved, "episode \(e.rule) \(e.id)")
            #expect(e.resolvedDay.map { $0 >= e.firedDay } ?? true)
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

    /// `--publish-series false` keeps series off MQTT but in the history; `--history-days off`
    /// records nothing.
    @Test(arguments: [["--publish-series", "false"], ["--history-days", "off"]])
    func seriesOffTheWireOrNoHistory(_ options: [String]) throws {
        let records = BuiltinScenario.jamiePlateau.generator(seed: 4).generate().map(\.record)
        let broker = try MosquittoBroker()
        let state = NSTemporaryDirectory() + "mw-history-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: state) }
        var daemon: DaemonUnderTest? = try DaemonUnderTest(broker: broker, state: state, extra: options)
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/series/#", "mobility/v1/users/+/alerts/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for r in records { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon!.waitProcessed(records.count, timeout: 60))
        #expect(daemon!.waitIdle())
        #expect(try rec.barrier())
        #expect(daemon!.process.stop() == 0)
        daemon = nil
        let alerts = rec.messages().filter { $0.topic.contains("/alerts/") && !$0.payload.isEmpty }
        let series = rec.messages().filter { $0.topic.contains("/series/") }
        #expect(!alerts.isEmpty, "alerts are published either way")
        let h = try StateStore(path: state + "/state.sqlite").history(of: BuiltinScenario.jamiePlateau.rawValue, from: .min, through: .max)
        if options.contains("off") {
            #expect(!series.isEmpty)
            #expect(h == UserHistory(user: BuiltinScenario.jamiePlateau.rawValue))
        } else {
            #expect(series.isEmpty)
            #expect((h.series["speed_p95"]?.count ?? 0) >= 80, "days of speed_p95 recorded: \(h.series["speed_p95"]?.count ?? 0)")
            #expect(h.alerts.count >= 1)
        }
    }
}
