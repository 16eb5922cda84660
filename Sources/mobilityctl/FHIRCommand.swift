import Foundation
import MobilityFHIR
import MobilityModel
import RuleLanguage
import StateStore

/// `mobilityctl fhir export --state DIR [--rules DIR] [--user U] [--from DAY] [--to DAY] [-o FILE|-]`:
/// a FHIR R4 `Bundle` (type `collection`) of a mobilityd state directory's history: a `Flag` per
/// alert instance (its latest transition through `--to`; instances over before `--from` left out)
/// and an `Observation` per recorded series value of the days `--from`…`--to` and per timeline
/// entry (clinical event or annotation) overlapping them. The series are
/// coded from their rules (`--rules`, else the rules the daemon last ran, kept in its store).
enum FHIRCommand {
    static let usage = """
        usage: mobilityctl fhir export --state DIR [--rules DIR] [--user USER] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [-o|--output FILE|-]
        """

    static func run(_ args: [String]) -> Int32 {
        guard args.first == "export" else {
            fail("mobilityctl fhir: " + (args.first.map { "unknown subcommand '\($0)'" } ?? "name a subcommand") + "\n" + usage)
        }
        var state: String?, user: String?, fromText: String?, toText: String?, output = "-"
        var rules: [String] = []
        var i = 1
        func value() -> String {
            i += 1
            guard i < args.count else { fail("mobilityctl fhir export: \(args[i - 1]) needs a value\n" + usage) }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--state": state = value()
            case "--rules": rules.append(value())
            case "--user": user = value()
            case "--from": fromText = value()
            case "--to": toText = value()
            case "-o", "--output": output = value()
            default: fail("mobilityctl fhir export: unknown argument \(args[i])\n" + usage)
            }
            i += 1
        }
        guard let state else { fail("mobilityctl fhir export: --state is required\n" + usage) }
        func day(_ text: String?, _ flag: String) -> DayNumber? {
            guard let text else { return nil }
            guard let d = CivilDate(parsing: Substring(text)), d.description == text else {
                fail("mobilityctl fhir export: \(flag) '\(text)' is not a day such as 2026-03-05\n" + usage)
            }
            return d.dayNumber
        }
        let from = day(fromText, "--from") ?? .min, through = day(toText, "--to") ?? .max
        guard from <= through else { fail("mobilityctl fhir export: --from \(fromText ?? "") is after --to \(toText ?? "")\n" + usage) }
        return export(state: state, rules: rules, user: user, from: from, through: through, output: output)
    }

    static func export(state dir: String, rules: [String], user: String?, from: DayNumber, through: DayNumber, output: String) -> Int32 {
        let path = dir + "/state.sqlite"
        guard FileManager.default.fileExists(atPath: path) else {
            writeErr("mobilityctl fhir export: \(dir) holds no mobilityd state (no state.sqlite)\n")
            return 1
        }
        do {
            let store = try StateStore(path: path, readOnly: true)  // mobilityd may be running: read, never write
            guard let meanings = try seriesMeanings(store: store, rules: rules) else { return 1 }
            let known = try store.historyUsers()
            if let user, !known.contains(user) {
                writeErr("mobilityctl fhir export: no history of user '\(user)' in \(dir)\n")
                return 1
            }
            var bundle = FHIRBundle()
            var flags = 0, entries = 0
            for u in user.map({ [$0] }) ?? known {
                // One Flag per instance: its latest transition, unless it was over before the range.
                var latest: [String: AlertTransition] = [:]
                var order: [String] = []
                for a in try store.alertTransitions(of: u, through: through) {
                    if latest.updateValue(a, forKey: a.id) == nil { order.append(a.id) }
                }
                for id in order {
                    guard let a = latest[id], a.status == .firing || a.day.dayNumber >= from else { continue }
                    bundle.add(a)
                    flags += 1
                }
                let h = try store.history(of: u, from: from, through: through)
                for name in h.series.keys.sorted() {
                    let unit = h.units[name] ?? ""
                    let toSI = (MeasureUnit.rule(unit) ?? .one).toSI
                    for (d, v) in h.series[name]!.sorted(by: { $0.key < $1.key }) {
                        guard let si = v else { continue }  // a missing day is no Observation
                        bundle.add(SeriesPoint(user: u, name: name, day: CivilDate(dayNumber: d), value: si / toSI, unit: unit), meaning: meanings[name])
                    }
                }
                // The timeline entries that overlap the range (who of the staff entered them, if staff did).
                for e in h.timeline where e.lastDay >= from && e.firstDay <= through {
                    bundle.add(e, user: u)
                    entries += 1
                }
            }
            guard ReportCommand.write(bundle.json + "\n", to: output) else { return 1 }
            let users = user == nil ? known.count : 1
            writeErr(
                "mobilityctl fhir export: \(flags) Flag\(flags == 1 ? "" : "s"), \(bundle.count - flags) Observations (\(entries) of timeline entries) of \(users) user\(users == 1 ? "" : "s") from \(dir)\n"
            )
            return 0
        } catch {
            writeErr("mobilityctl fhir export: cannot read \(path): \(error)\n")
            return 1
        }
    }

    /// The series' meanings from `--rules`, or from the rules the daemon last ran; empty (series
    /// coded by name only) when the store holds none; nil after printing why the rules are bad.
    static func seriesMeanings(store: StateStore, rules: [String]) throws -> [String: SeriesMeaning]? {
        var sources: [SourceFile]
        if rules.isEmpty {
            guard let text = try store.meta("rules_sources"), case .success(.object(let files)) = JSONValue.parse(Array(text.utf8)) else {
                writeErr("mobilityctl fhir export: the state holds no rules and none were named (--rules): series are coded by name only\n")
                return [:]
            }
            sources = files.compactMap { if case .string(let t) = $0.1 { SourceFile(path: $0.0, text: t) } else { nil } }
        } else {
            let (loaded, errors) = RuleSet.load(rules)
            guard errors.isEmpty else { errors.forEach { writeErr("mobilityctl: \($0)\n") }; return nil }
            sources = loaded
        }
        let (program, diagnostics) = Checker.check(sources)
        guard let program else { writeErr(DiagnosticRenderer(files: sources).render(diagnostics)); return nil }
        return SeriesMeaning.of(program)
    }
}
