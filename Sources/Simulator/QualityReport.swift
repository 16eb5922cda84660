import Foundation
import MobilityModel
import RuleEngine
import RuleLanguage
import Synchronization

/// Alert quality of labelled rules on a cohort: per rule, precision and recall (Wilson 95 %
/// intervals), false alerts per 100 patient-weeks at risk (exact Poisson 95 % interval) and
/// detection delay (days from the labelled onset to the first firing: median and 90th
/// percentile). Several seeds pool into one report.
public struct QualityReport: Sendable {
    /// One firing transition (repeats excluded) of a labelled rule.
    public struct Firing: Sendable, Hashable {
        /// The rule that fired.
        public var rule: String
        /// The user it fired for.
        public var user: String
        /// The cohort day (1-based) of the evaluated local day.
        public var day: Int

        /// Creates a firing.
        public init(rule: String, user: String, day: Int) {
            self.rule = rule
            self.user = user
            self.day = day
        }
    }

    /// The scores of one rule.
    public struct RuleScore: Sendable {
        /// Users labelled positive and alerted at all (user level, the old table's definition).
        public var truePositive = 0, falsePositive = 0, falseNegative = 0, trueNegative = 0
        /// Positive users detected: a firing on or after three days before the labelled onset.
        public var detected = 0
        /// Users labelled positive.
        public var positives = 0
        /// Firings that are not a detection: every firing of a negative user, and a positive
        /// user's firings more than three days before the onset.
        public var falseAlerts = 0
        /// Days at risk of a false alert: the days the labelled condition could apply (the
        /// 3rd–9th week after an injury for `stalled_recovery`, every day for the other rules),
        /// of negative users and of positive users before their onset.
        public var riskDays = 0
        /// Detection delays (days from the onset to the first detecting firing).
        public var delays: [Int] = []
        /// Alerted users by pattern (and wide-cohort trait), false alerts only.
        public var falseFor: [String: Int] = [:]
        /// Missed positive users by pattern (and trait).
        public var missedFor: [String: Int] = [:]

        /// Zero counts.
        public init() {}

        /// Of the users alerted, the fraction that should have been.
        public var precision: Double? { ratio(truePositive, truePositive + falsePositive) }
        /// Of the positive users, the fraction detected.
        public var recall: Double? { ratio(detected, positives) }
        /// False alerts per 100 patient-weeks at risk.
        public var falseAlertRate: Double? { riskDays == 0 ? nil : Double(falseAlerts) / (Double(riskDays) / 7) * 100 }

        func ratio(_ a: Int, _ b: Int) -> Double? { b == 0 ? nil : Double(a) / Double(b) }

        mutating func add(_ o: RuleScore) {
            truePositive += o.truePositive
            falsePositive += o.falsePositive
            falseNegative += o.falseNegative
            trueNegative += o.trueNegative
            detected += o.detected
            positives += o.positives
            falseAlerts += o.falseAlerts
            riskDays += o.riskDays
            delays += o.delays
            falseFor.merge(o.falseFor, uniquingKeysWith: +)
            missedFor.merge(o.missedFor, uniquingKeysWith: +)
        }
    }

    /// Scores by rule name.
    public var rules: [String: RuleScore] = [:]
    /// Messages streamed through the engine.
    public var messages = 0
    /// Users scored (over all seeds).
    public var users = 0

    /// An empty report.
    public init() {}

    /// How many days before the labelled onset a firing still counts as its detection.
    public static let earlyTolerance = 3

    /// Scores firings against labels.
    public static func score(labels: [Population.Label], firings: [Firing], rules names: [String] = Population.labelledRules) -> QualityReport {
        var byKey: [String: [Int]] = [:]
        for f in firings { byKey[f.rule + "\u{0}" + f.user, default: []].append(f.day) }
        var report = QualityReport()
        report.users = labels.count
        for label in labels {
            let tag = ([label.pattern.rawValue] + label.traits).joined(separator: "+")
            for rule in names {
                var s = report.rules[rule] ?? RuleScore()
                let days = (byKey[rule + "\u{0}" + label.user] ?? []).sorted()
                let eligible = riskWindow(rule, label)
                let should = label.expected.contains(rule)
                switch (should, !days.isEmpty) {
                case (true, true): s.truePositive += 1
                case (false, true): s.falsePositive += 1
                case (true, false): s.falseNegative += 1
                case (false, false): s.trueNegative += 1
                }
                if should, let onset = label.onset[rule] {
                    s.positives += 1
                    let from = onset - earlyTolerance
                    s.falseAlerts += days.filter { $0 < from }.count
                    if let first = days.first(where: { $0 >= from }) {
                        s.detected += 1
                        s.delays.append(first - onset)
                    } else {
                        s.missedFor[tag, default: 0] += 1
                    }
                    s.riskDays += eligible.map { max(0, min($0.upperBound, from - 1) - $0.lowerBound + 1) } ?? 0
                } else {
                    s.falseAlerts += days.count
                    if !days.isEmpty { s.falseFor[tag, default: 0] += 1 }
                    s.riskDays += eligible?.count ?? 0
                }
                report.rules[rule] = s
            }
        }
        return report
    }

    /// The days a labelled condition could apply to a user: `stalled_recovery` speaks of the
    /// 3rd to 9th week of a recovery (days 21–60 after an injury; none without one), every other
    /// rule of every day.
    static func riskWindow(_ rule: String, _ label: Population.Label) -> ClosedRange<Int>? {
        guard rule == "stalled_recovery" else { return label.days >= 1 ? 1...label.days : nil }
        guard let inj = label.injuryDay, inj + 21 <= label.days else { return nil }
        return (inj + 21)...min(inj + 60, label.days)
    }

    /// Adds another seed's report.
    public mutating func add(_ o: QualityReport) {
        for (k, v) in o.rules { rules[k, default: RuleScore()].add(v) }
        messages += o.messages
        users += o.users
    }

    /// The report as a Markdown table (the one docs/alert-quality.md quotes).
    public func table(rules names: [String] = Population.labelledRules) -> String {
        var out =
            "| rule | positive users | alerted | precision [95 % CI] | recall [95 % CI] | false alerts / 100 patient-weeks [95 % CI] | delay median / p90 (d) |\n"
        out += "|---|---|---|---|---|---|---|\n"
        for name in names {
            let s = rules[name] ?? RuleScore()
            let precision = QualityReport.proportion(s.truePositive, s.truePositive + s.falsePositive)
            let recall = QualityReport.proportion(s.detected, s.positives)
            var rate = "n/a"
            if s.riskDays > 0 {
                let weeks = Double(s.riskDays) / 7 / 100
                let (lo, hi) = ConfidenceInterval.poisson(s.falseAlerts)
                rate = String(format: "%.2f [%.2f, %.2f] (%d in %.0f)", Double(s.falseAlerts) / weeks, lo / weeks, hi / weeks, s.falseAlerts, weeks * 100)
            }
            var delay = "n/a"
            if !s.delays.isEmpty {
                let d = s.delays.sorted()
                delay = "\(QualityReport.quantile(d, 0.5)) / \(QualityReport.quantile(d, 0.9))"
            }
            out += "| \(name) | \(s.positives) | \(s.truePositive + s.falsePositive) | \(precision) | \(recall) | \(rate) | \(delay) |\n"
        }
        return out
    }

    /// Which patterns (and traits) the false alerts and misses of each rule came from.
    public func breakdown(rules names: [String] = Population.labelledRules) -> String {
        var out = ""
        for name in names {
            guard let s = rules[name], !(s.falseFor.isEmpty && s.missedFor.isEmpty) else { continue }
            func list(_ m: [String: Int]) -> String {
                m.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(12).map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            }
            if !s.falseFor.isEmpty { out += "\(name): false alerts for \(list(s.falseFor))\n" }
            if !s.missedFor.isEmpty { out += "\(name): missed \(list(s.missedFor))\n" }
        }
        return out
    }

    /// `k/n` as a proportion with its Wilson interval, or n/a.
    static func proportion(_ k: Int, _ n: Int) -> String {
        guard n > 0 else { return "n/a" }
        let (lo, hi) = ConfidenceInterval.wilson(k, n)
        return String(format: "%.3f [%.3f, %.3f]", Double(k) / Double(n), lo, hi)
    }

    /// The nearest-rank quantile of sorted values.
    static func quantile(_ sorted: [Int], _ q: Double) -> Int {
        let rank = max(1, Int((q * Double(sorted.count)).rounded(.up)))
        return sorted[min(sorted.count, rank) - 1]
    }
}

extension Population {
    /// Every first firing (not reminders) of the labelled rules: each user's traffic through an
    /// in-process engine in event time (samples decoded without their JSON:
    /// ``TrafficGenerator/generateDecoded(day:templates:)``), users shared out over `threads` (each thread its own
    /// engine, users independent), sorted by rule, user and day, so the result does not depend
    /// on `threads`; and the number of messages.
    public func firings(program: Program, threads: Int = 1) -> (firings: [QualityReport.Firing], messages: Int) {
        let n = max(1, min(threads, users))
        let labelled = Set(Population.labelledRules)
        let day1 = Timeline().start.dayNumber
        let parts = Mutex<[(firings: [QualityReport.Firing], messages: Int)]>([])
        DispatchQueue.concurrentPerform(iterations: n) { t in
            var ing = Ingestor(
                engine: Engine(
                    program: program,
                    configuration: {
                        var c = EngineConfiguration(); c.publishSeries = false; return c
                    }()), clock: .event)
            var out: [EngineOutput] = []
            var firings: [QualityReport.Firing] = []
            ing.tracksLastSampleID = false
            var messages = 0
            var templates = TrafficGenerator.SampleTemplates(decoder: ing.decoder)
            for i in stride(from: t, to: users, by: n) {
                let g = user(i).0
                let topic = g.layout.samples(g.persona.user)
                // Samples messages go in decoded (generateDecoded: what the wire decoder gives for
                // their JSON, without writing and parsing the JSON); the other messages as published.
                guard case .inbound(let u, .samples) = g.layout.parse(topic) else { preconditionFailure("a population user id is valid") }
                for d in 1...max(days, 1) {
                    let timed = g.generateDecoded(day: d, templates: &templates)
                    for r in timed.enumerated().sorted(by: { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }) {
                        switch r.element.message {
                        case .record(let rec): ing.handle(topic: rec.topic, payload: rec.payload, now: Timestamp(seconds: 0), into: &out)
                        case .samples(let decoded): ing.handle(decodedSamples: decoded, user: u, topic: topic, now: Timestamp(seconds: 0), into: &out)
                        }
                        messages += 1
                        for o in out {
                            guard case .alert(let a) = o, a.status == .firing, !a.isRepeat, labelled.contains(a.rule) else { continue }
                            firings.append(QualityReport.Firing(rule: a.rule, user: a.user, day: Int(a.day.dayNumber - day1) + 1))
                        }
                        out.removeAll(keepingCapacity: true)
                    }
                }
            }
            parts.withLock { $0.append((firings, messages)) }
        }
        var all: [QualityReport.Firing] = [], messages = 0
        for p in parts.withLock({ $0 }) {
            all += p.firings
            messages += p.messages
        }
        all.sort { ($0.rule, $0.user, $0.day) < ($1.rule, $1.user, $1.day) }
        return (all, messages)
    }

    /// The cohort's quality report for a program.
    public func quality(program: Program, threads: Int = 1) -> QualityReport {
        let (f, messages) = firings(program: program, threads: threads)
        var report = QualityReport.score(labels: labels(), firings: f)
        report.messages = messages
        return report
    }
}
