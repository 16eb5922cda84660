import Foundation
import Ingest
import MobilityModel
import RuleEngine
import RuleLanguage
import Synchronization

/// Alert quality of labelled rules on a cohort: per rule, overall and per shape (a pattern, or a
/// trait of the users that have it), precision and recall (Wilson 95 % intervals), false alerts
/// per 100 patient-weeks at risk and over all weeks (exact Poisson 95 % intervals) and detection
/// delay (days from the labelled onset to the first detecting firing: median and 90th percentile
/// with distribution-free 95 % intervals). Several seeds pool into one report.
package struct QualityReport: Sendable {
    /// One firing transition (repeats excluded) of a labelled rule.
    package struct Firing: Sendable, Hashable {
        /// The rule that fired.
        package var rule: String
        /// The user it fired for.
        package var user: String
        /// The cohort day (1-based) of the evaluated local day.
        package var day: Int
        /// Whether a re-evaluation withdrew it later (a `resolved` transition with reason
        /// `revised`: a late entry explained it). Not a detection, not a false alert: counted on its own.
        package var withdrawn: Bool

        package init(rule: String, user: String, day: Int, withdrawn: Bool = false) {
            self.rule = rule
            self.user = user
            self.day = day
            self.withdrawn = withdrawn
        }
    }

    /// The scores of one rule, for all users or for one shape.
    package struct RuleScore: Sendable {
        /// Users labelled positive and alerted at all (user level, the old table's definition).
        package var truePositive = 0, falsePositive = 0, falseNegative = 0, trueNegative = 0
        /// Positive users detected: a firing on or after three days before the labelled onset.
        package var detected = 0
        /// Users labelled positive.
        package var positives = 0
        /// Firings that are not a detection: every firing of a negative user, and a positive
        /// user's firings more than three days before the onset (withdrawn firings excepted).
        package var falseAlerts = 0
        /// Days at risk of a false alert: the days the labelled condition could apply (recovery
        /// days 14–60 for `stalled_recovery`, every day for the other rules), of negative users
        /// and of positive users before their onset.
        package var riskDays = 0
        /// False alerts on any day (for `stalled_recovery` also those outside its risk days).
        package var falseAlertsAllDays = 0
        /// Every simulated day of negative users and of positive users before their onset.
        package var allDays = 0
        /// Firings withdrawn by a re-evaluation (a late entry or late data explained them).
        package var withdrawn = 0
        /// Users the labels leave unscored for the rule (borderline) and how many of them it alerted for.
        package var borderline = 0, borderlineAlerted = 0
        /// Detection delays (days from the onset to the first detecting firing).
        package var delays: [Int] = []
        /// Alerted users by pattern (and trait), false alerts only.
        package var falseFor: [String: Int] = [:]
        /// Missed positive users by pattern (and trait).
        package var missedFor: [String: Int] = [:]

        /// Zero counts.
        package init() {}

        /// Of the users alerted, the fraction that should have been.
        package var precision: Double? { ratio(truePositive, truePositive + falsePositive) }
        /// Of the positive users, the fraction detected.
        package var recall: Double? { ratio(detected, positives) }
        /// False alerts per 100 patient-weeks at risk.
        package var falseAlertRate: Double? { riskDays == 0 ? nil : Double(falseAlerts) / (Double(riskDays) / 7) * 100 }
        /// False alerts per 100 patient-weeks, all weeks.
        package var falseAlertRateAllWeeks: Double? { allDays == 0 ? nil : Double(falseAlertsAllDays) / (Double(allDays) / 7) * 100 }

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
            falseAlertsAllDays += o.falseAlertsAllDays
            allDays += o.allDays
            withdrawn += o.withdrawn
            borderline += o.borderline
            borderlineAlerted += o.borderlineAlerted
            delays += o.delays
            falseFor.merge(o.falseFor, uniquingKeysWith: +)
            missedFor.merge(o.missedFor, uniquingKeysWith: +)
        }

        /// Whether the shape says anything about the rule: it has positives, days at risk or borderline users.
        var isEmpty: Bool { positives == 0 && riskDays == 0 && borderline == 0 }
    }

    /// Scores by rule name.
    package var rules: [String: RuleScore] = [:]
    /// Scores by rule name and shape: a pattern (`normal`), or a trait (`+sparse`: every user with it).
    package var shapes: [String: [String: RuleScore]] = [:]
    /// Messages streamed through the engine.
    package var messages = 0
    /// Users scored (over all seeds).
    package var users = 0

    /// An empty report.
    package init() {}

    /// How many days before the labelled onset a firing still counts as its detection.
    package static let earlyTolerance = 3

    /// Scores firings against labels.
    package static func score(labels: [Population.Label], firings: [Firing], rules names: [String] = Population.labelledRules) -> QualityReport {
        var byKey: [String: [Firing]] = [:]
        for f in firings { byKey[f.rule + "\u{0}" + f.user, default: []].append(f) }
        var report = QualityReport()
        report.users = labels.count
        for label in labels {
            let tag = ([label.pattern.rawValue] + label.traits).joined(separator: "+")
            let shapes = [label.pattern.rawValue] + label.traits.map { "+" + $0 }
            for rule in names {
                var s = RuleScore()
                let all = (byKey[rule + "\u{0}" + label.user] ?? []).sorted { $0.day < $1.day }
                let days = all.filter { !$0.withdrawn }.map(\.day)
                s.withdrawn = all.count - days.count
                let eligible = riskWindow(rule, label)
                if label.unscored.contains(rule) {
                    s.borderline = 1
                    s.borderlineAlerted = days.isEmpty ? 0 : 1
                } else {
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
                        let early = days.filter { $0 < from }
                        s.falseAlertsAllDays += early.count
                        s.falseAlerts += early.filter { eligible?.contains($0) == true }.count
                        if let first = days.first(where: { $0 >= from }) {
                            s.detected += 1
                            s.delays.append(first - onset)
                        } else {
                            s.missedFor[tag, default: 0] += 1
                        }
                        s.riskDays += eligible.map { max(0, min($0.upperBound, from - 1) - $0.lowerBound + 1) } ?? 0
                        s.allDays += max(0, min(label.days, from - 1))
                    } else {
                        s.falseAlertsAllDays += days.count
                        s.falseAlerts += days.filter { eligible?.contains($0) == true }.count
                        if !days.isEmpty { s.falseFor[tag, default: 0] += 1 }
                        s.riskDays += eligible?.count ?? 0
                        s.allDays += label.days
                    }
                }
                report.rules[rule, default: RuleScore()].add(s)
                for shape in shapes { report.shapes[rule, default: [:]][shape, default: RuleScore()].add(s) }
            }
        }
        return report
    }

    /// The days a labelled condition could apply to a user: `stalled_recovery` speaks of recovery
    /// days 14–60 (the days it watches; none without an injury), every other rule of every day.
    static func riskWindow(_ rule: String, _ label: Population.Label) -> ClosedRange<Int>? {
        guard rule == "stalled_recovery" else { return label.days >= 1 ? 1...label.days : nil }
        guard let inj = label.injuryDay, inj + 14 <= label.days else { return nil }
        return (inj + 14)...min(inj + 60, label.days)
    }

    /// Adds another seed's report.
    package mutating func add(_ o: QualityReport) {
        for (k, v) in o.rules { rules[k, default: RuleScore()].add(v) }
        for (k, m) in o.shapes { for (shape, v) in m { shapes[k, default: [:]][shape, default: RuleScore()].add(v) } }
        messages += o.messages
        users += o.users
    }

    /// The report as a Markdown table, one row per rule (the one docs/alert-quality.md quotes).
    package func table(rules names: [String] = Population.labelledRules) -> String {
        var out = "| rule | " + QualityReport.header + "\n"
        out += "|---|" + String(repeating: "---|", count: QualityReport.columns) + "\n"
        for name in names { out += "| \(name) | " + QualityReport.row(rules[name] ?? RuleScore()) + "\n" }
        return out
    }

    /// One Markdown table per rule with a row for all users and one for each shape (patterns,
    /// then traits, `+trait`) the rule has positives, days at risk or borderline users in.
    package func shapeTables(rules names: [String] = Population.labelledRules) -> String {
        var out = ""
        for name in names {
            out += "### \(name)\n\n| shape | " + QualityReport.header + "\n"
            out += "|---|" + String(repeating: "---|", count: QualityReport.columns) + "\n"
            out += "| **all** | " + QualityReport.row(rules[name] ?? RuleScore()) + "\n"
            let shapes = (self.shapes[name] ?? [:]).filter { !$0.value.isEmpty }
            for key in shapes.keys.sorted(by: { ($0.hasPrefix("+") ? 1 : 0, $0) < ($1.hasPrefix("+") ? 1 : 0, $1) }) {
                out += "| \(key) | " + QualityReport.row(shapes[key]!) + "\n"
            }
            if let s = rules[name], s.borderline > 0 {
                out += "\nBorderline (unscored) users: \(s.borderline), alerted for \(s.borderlineAlerted).\n"
            }
            out += "\n"
        }
        return out
    }

    static let header =
        "positive users | alerted | precision [95 % CI] | recall [95 % CI] | false alerts / 100 patient-weeks at risk [95 % CI] (n in weeks) | all weeks | delay median [95 % CI] / p90 [95 % CI] (d) | withdrawn |"
    static let columns = 8

    /// A table row's cells after the first, for a score.
    static func row(_ s: RuleScore) -> String {
        let precision = proportion(s.truePositive, s.truePositive + s.falsePositive)
        let recall = proportion(s.detected, s.positives)
        var rate = "n/a", all = "n/a"
        if s.riskDays > 0 {
            let weeks = Double(s.riskDays) / 7 / 100
            let (lo, hi) = ConfidenceInterval.poisson(s.falseAlerts)
            rate = String(format: "%.2f [%.2f, %.2f] (%d in %.0f)", Double(s.falseAlerts) / weeks, lo / weeks, hi / weeks, s.falseAlerts, weeks * 100)
        }
        if s.allDays > 0 {
            let weeks = Double(s.allDays) / 7 / 100
            let (lo, hi) = ConfidenceInterval.poisson(s.falseAlertsAllDays)
            all = String(format: "%.2f [%.2f, %.2f]", Double(s.falseAlertsAllDays) / weeks, lo / weeks, hi / weeks)
        }
        var delay = "n/a"
        if !s.delays.isEmpty {
            let d = s.delays.sorted()
            func q(_ p: Double) -> String {
                let (lo, hi) = quantileInterval(d, p)
                return "\(quantile(d, p)) [\(lo), \(hi)]"
            }
            delay = "\(q(0.5)) / \(q(0.9))"
        }
        return "\(s.positives) | \(s.truePositive + s.falsePositive) | \(precision) | \(recall) | \(rate) | \(all) | \(delay) | \(s.withdrawn) |"
    }

    /// Each rule's recall and false alerts per 100 patient-weeks at risk, on one line (a seed's spread).
    package func seedSummary(rules names: [String] = Population.labelledRules) -> String {
        names.map { name in
            let s = rules[name] ?? RuleScore()
            return "\(name) recall \(s.recall.map { String(format: "%.3f", $0) } ?? "n/a"), "
                + "false \(s.falseAlertRate.map { String(format: "%.2f", $0) } ?? "n/a")"
        }.joined(separator: "; ")
    }

    /// Which patterns (and traits) the false alerts and misses of each rule came from.
    package func breakdown(rules names: [String] = Population.labelledRules) -> String {
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

    /// A distribution-free 95 % interval of the q-quantile: the order statistics at ranks
    /// nq ∓ 1.96 √(nq(1 − q)) (the normal approximation of the binomial count of values below the
    /// quantile), clamped to the sample; with few values it is wide, and at the extremes it is
    /// the sample's range.
    package static func quantileInterval(_ sorted: [Int], _ q: Double) -> (Int, Int) {
        let n = Double(sorted.count), half = ConfidenceInterval.z * (n * q * (1 - q)).squareRoot()
        let lo = max(1, Int((n * q - half).rounded(.down))), hi = min(sorted.count, Int((n * q + half).rounded(.up)) + 1)
        return (sorted[lo - 1], sorted[hi - 1])
    }
}

extension Population {
    /// Every first firing (not reminders) of the labelled rules: each user's traffic through an
    /// in-process engine in event time (samples decoded without their JSON:
    /// ``TrafficGenerator/generateDecoded(block:templates:)``; a phone that syncs every N days
    /// publishes each sync on the block's last day), users shared out over `threads` (each thread
    /// its own engine, users independent), sorted by rule, user and day, so the result does not
    /// depend on `threads`; firings a re-evaluation later withdrew are marked; and the number of
    /// messages.
    package func firings(program: Program, threads: Int = 1) -> (firings: [QualityReport.Firing], messages: Int) {
        let n = max(1, min(threads, users))
        let parts = Mutex<[(firings: [QualityReport.Firing], messages: Int)]>([])
        DispatchQueue.concurrentPerform(iterations: n) { t in
            var ing = Ingestor(
                engine: Engine(
                    program: program,
                    configuration: {
                        var c = EngineConfiguration(); c.publishSeries = false; return c
                    }()), clock: .event)
            var out: [EngineOutput] = []
            var collector = FiringCollector()
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
                    guard let block = Population.syncBlock(ending: d, every: g.syncDays, days: days) else { continue }
                    let timed = g.generateDecoded(block: block, templates: &templates)
                    for r in timed.enumerated().sorted(by: { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }) {
                        switch r.element.message {
                        case .record(let rec): ing.handle(topic: rec.topic, payload: rec.payload, now: Timestamp(seconds: 0), into: &out)
                        case .samples(let decoded): ing.handle(decodedSamples: decoded, user: u, topic: topic, now: Timestamp(seconds: 0), into: &out)
                        }
                        messages += 1
                        collector.collect(out)
                        out.removeAll(keepingCapacity: true)
                    }
                }
            }
            parts.withLock { $0.append((collector.firings, messages)) }
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
    package func quality(program: Program, threads: Int = 1) -> QualityReport {
        let (f, messages) = firings(program: program, threads: threads)
        var report = QualityReport.score(labels: labels(), firings: f)
        report.messages = messages
        return report
    }
}

/// The labelled rules' first firings in a stream of engine outputs, each marked when a later
/// `resolved` transition with reason `revised` withdraws it.
package struct FiringCollector {
    /// The firings so far, in the order they were published.
    package var firings: [QualityReport.Firing] = []
    private var byID: [String: Int] = [:]
    private let labelled = Set(Population.labelledRules)
    private let day1 = Timeline().start.dayNumber

    /// An empty collector.
    package init() {}

    /// Takes the firings and withdrawals of a batch of outputs.
    package mutating func collect(_ outputs: [EngineOutput]) {
        for o in outputs {
            guard case .alert(let a) = o, labelled.contains(a.rule) else { continue }
            if a.status == .firing, !a.isRepeat {
                byID[a.id] = firings.count
                firings.append(QualityReport.Firing(rule: a.rule, user: a.user, day: Int(a.day.dayNumber - day1) + 1))
            } else if a.status == .resolved, a.reason == AlertTransition.revised, let k = byID[a.id] {
                firings[k].withdrawn = true
            }
        }
    }
}
