import Foundation
import MobilityModel
import PostgresStore
import RuleLanguage
import StateStore
import TestSupport
import Testing

@testable import RuleEngine

/// The state backends the conformance tests run against: the SQLite store in a temporary
/// directory, and PostgreSQL (a fresh database on the test process's real server).
enum Backend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite, postgres

    var testDescription: String { rawValue }

    /// A fresh, empty store, and a way to open the same state again (a restart; for PostgreSQL
    /// another owner, which takes the partition over).
    func make() throws -> (store: any StateBackend, reopen: () throws -> any StateBackend) {
        switch self {
        case .sqlite:
            let dir = TemporaryPath.make("mw-conf")
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let path = dir + "/state.sqlite"
            return (try StateStore(path: path), { try StateStore(path: path) })
        case .postgres:
            let url = try PostgresServer.shared().createDatabase()
            return (try PostgresStore(url: url, owner: "first"), { try PostgresStore(url: url, owner: "again") })
        }
    }
}

/// Engines with real content, built through the engine itself.
enum Engines {
    static let program = try! #require(
        Checker.check(
            text: """
                series s = p95(walkingSpeed)
                alert slow { when mean(s, 3 d) < 1 m/s
                  for 1 d }
                """
        ).program)

    static func sample(_ id: String, _ value: Double, at t: Timestamp, sync: Int? = nil) -> Sample {
        var metadata: [String: MetadataValue] = [:]
        if let sync {
            metadata[MetadataKey.syncIdentifier] = .string("k-\(id)")
            metadata[MetadataKey.syncVersion] = .number(Double(sync))
        }
        return Sample(id: id, metric: .walkingSpeed, value: value, start: t, end: t, metadata: metadata)
    }

    /// A user with a profile, timeline entries, open days, folded days and a firing alert.
    static func populated() throws -> Engine {
        var e = Engine(program: program)
        var out: [EngineOutput] = []
        let tz = try #require(LocalCalendar(identifier: "Europe/Zurich"))
        e.setProfile(user: "u", calendar: tz)
        e.record(event: TimelineEvent(id: "i", category: .clinical, kind: "injury", firstDay: 20_500, lastDay: 20_500), user: "u")
        e.record(event: TimelineEvent(id: "h", category: .annotation, kind: "heat_wave", firstDay: 20_501, lastDay: 20_503, note: "hot"), user: "u")
        for d in 0..<6 {
            let t = tz.startOfDay(DayNumber(20_500 + d)).adding(seconds: 36_000)
            e.ingest(sample("s\(d)", 0.8, at: t, sync: 1), user: "u", now: t, into: &out)
        }
        e.advance(to: tz.startOfDay(20_506).adding(seconds: 7200), into: &out)
        #expect(e.state(of: "u")!.alerts["slow"]?.isFiring == true)
        return e
    }
}

extension UserSnapshot {
    /// The engine state this snapshot restores to, under its own alert names and daily inputs.
    var restored: UserState { UserState(restoring: self, alertNames: alerts.map(\.rule), inputs: foldedInputs.map(\.dailyInput)) }
}
