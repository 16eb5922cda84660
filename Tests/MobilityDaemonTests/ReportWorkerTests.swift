import CareReports
import Foundation
import Ingest
import MobilityModel
import MobilityWire
import RuleEngine
import RuleLanguage
import Simulator
import StateStore
import Synchronization
import TestSupport
import Testing

@testable import MobilityDaemon

/// The report worker builds a shard's weekly digests off the shard's thread: a shard over a real
/// SQLite store (wrapped to refuse or hold the report commits, as a failing disk would), the
/// published outputs captured. (The daemon end to end: ``ReportWorkerDaemonTests``.)
@Suite(.serialized) struct ReportWorkerTests {
    /// Captures what the shard and its worker publish.
    final class Captured: OutputSink, @unchecked Sendable {
        let items = Mutex<[StateStore.OutboxItem]>([])
        func publish(_ i: [StateStore.OutboxItem]) -> Int {
            items.withLock { $0 += i }
            return 0
        }
        /// The weeks of the digests published on `user`'s report topic, in order.
        func weeks(of user: String) -> [String] {
            items.withLock { $0 }.filter { $0.topic == TopicLayout().weeklyReport(user) }.compactMap {
                try? WeeklyDigest.decode($0.payload).get().week.description
            }
        }
    }

    /// A disk that refuses writes, as the worker sees it.
    struct Refused: Error {}

    /// A real store whose report commits refuse while `refuse` is set, or wait for `gate` while
    /// `hold` is set (everything else goes straight through), and which notes each state
    /// commit's users' applied positions and stream sequences (the latter kept here only: the
    /// SQLite store keeps none).
    final class ControlledStore: StateBackend, @unchecked Sendable {
        let store: StateStore
        let commits = Mutex<[(applied: [String: UInt64], streamSequences: [Int: UInt64])]>([])
        let refuse = Atomic<Bool>(false)
        let refused = Atomic<Int>(0)
        let stored = Atomic<Int>(0)
        let hold = Atomic<Bool>(false)
        let holding = Atomic<Bool>(false)
        let gate = DispatchSemaphore(value: 0)
        init(_ store: StateStore) { self.store = store }

        func commitReports(outbox: [StateStore.OutboxItem], history: [HistoryRecord], prune: [HistoryPrune]) throws -> [Int64] {
            if hold.load(ordering: .relaxed) {
                holding.store(true, ordering: .relaxed)
                gate.wait()
            }
            if refuse.load(ordering: .relaxed) {
                refused.add(1, ordering: .relaxed)
                throw Refused()
            }
            let ids = try store.commitReports(outbox: outbox, history: history, prune: prune)
            stored.add(1, ordering: .relaxed)
            return ids
        }
        func load<Prepared: Sendable>(
            alertNames: [String], prepare: @escaping @Sendable (UserSnapshot) -> Prepared
        ) throws -> (
            users: [StoredUser<Prepared>], outbox: [StateStore.OutboxItem]
        ) { try store.load(alertNames: alertNames, prepare: prepare) }
        func commit(users: [StateStore.UserRecord], outbox: [StateStore.OutboxItem], acknowledged: [Int64], history: [HistoryRecord]) throws -> [Int64] {
            let ids = try store.commit(users: users, outbox: outbox, acknowledged: acknowledged, history: history)
            commits.withLock { $0.append((Dictionary(users.map { ($0.user, $0.appliedSeq) }) { $1 }, [:])) }
            return ids
        }
        func commit(
            users: [StateStore.UserRecord], outbox: [StateStore.OutboxItem], acknowledged: [Int64], history: [HistoryRecord], audited: [AuditedChange],
            streamSequences: [Int: UInt64]
        ) throws -> (ids: [Int64], announced: [StateStore.OutboxItem]) {
            let done = try store.commit(users: users, outbox: outbox, acknowledged: acknowledged, history: history, audited: audited)
            commits.withLock { $0.append((Dictionary(users.map { ($0.user, $0.appliedSeq) }) { $1 }, streamSequences)) }
            return done
        }
        func history(of user: String, from: DayNumber, through: DayNumber) throws -> UserHistory { try store.history(of: user, from: from, through: through) }
        func weeklyReport(of user: String, week: String?) throws -> (week: String, payload: [UInt8])? { try store.weeklyReport(of: user, week: week) }
        func reportWeeks(of user: String) throws -> [String] { try store.reportWeeks(of: user) }
        func dueReports() throws -> [(user: String, week: String)] { try store.dueReports() }
        func pruneHistory(_ users: [(user: String, keepFrom: DayNumber, reportsFrom: DayNumber)]) throws -> Int { try store.pruneHistory(users) }
        func acknowledge(_ ids: [Int64]) throws { try store.acknowledge(ids) }
        func park(_ items: [(id: Int64, reason: String)], at: Int64) throws -> Int { try store.park(items, at: at) }
        func deadLetters() throws -> [StateStore.DeadLetter] { try store.deadLetters() }
        func meta(_ key: String) throws -> String? { try store.meta(key) }
        func setMeta(_ key: String, _ value: String) throws { try store.setMeta(key, value) }
        func recordAcknowledgement(
            _ a: StoredAcknowledgement, audit: AuditEntry, outbox: (AuditEntry) -> [StateStore.OutboxItem]
        ) throws -> (
            seq: Int64, outbox: [StateStore.OutboxItem]
        ) { try store.recordAcknowledgement(a, audit: audit, outbox: outbox) }
        func alertAcknowledgements() throws -> [StoredAcknowledgement] { try store.alertAcknowledgements() }
        func clearAcknowledgements(_ alerts: [String]) throws { try store.clearAcknowledgements(alerts) }
        func firingPayload(user: String, alert: String) throws -> [UInt8]? { try store.firingPayload(user: user, alert: alert) }
        func auditTrail(limit: Int) throws -> [AuditEntry] { try store.auditTrail(limit: limit) }
        func auditTrail(of user: String, action: String, limit: Int) throws -> [AuditEntry] {
            try store.auditTrail(of: user, action: action, limit: limit)
        }
        func recordSilence(_ s: Silence, audit: AuditEntry, outbox: (AuditEntry) -> [StateStore.OutboxItem]) throws -> [StateStore.OutboxItem] {
            try store.recordSilence(s, audit: audit, outbox: outbox)
        }
        func expireSilence(id: String, audit: AuditEntry, outbox: (AuditEntry) -> [StateStore.OutboxItem]) throws -> [StateStore.OutboxItem] {
            try store.expireSilence(id: id, audit: audit, outbox: outbox)
        }
        func silences() throws -> (silences: [Silence], unreadable: [String]) { try store.silences() }
        var location: String { store.location }
        func checkpoint() throws { try store.checkpoint() }
        var needsCheckpoints: Bool { store.needsCheckpoints }
    }

    static let layout = TopicLayout()

    static func program() throws -> Program { try #require(Checker.check(RuleSet.load([RepoPaths.rules]).sources).program) }

    /// A shard over `store` with the shipped rules (event clock), its users restored from the
    /// store and the weeks it holds due added, as the daemon starts one; started.
    static func startShard(_ store: ControlledStore, sink: Captured, weeksPerAttempt: Int? = nil, clock: DaemonClock = .system) throws -> Shard {
        let program = try program()
        let config = DaemonConfiguration().engine
        let shard = Shard(
            index: 0, ingestor: Ingestor(engine: Engine(program: program, configuration: config), layout: layout, clock: .event, boundedByWallClock: true),
            capacity: 100_000, sink: sink, store: store, journal: nil, acks: PublishTracker(), log: Logger(format: .logfmt, level: .error),
            clock: clock)
        var users = try store.load(alertNames: program.alerts.map(\.name), prepare: Engine(program: program, configuration: config).preparer).users
        for i in users.indices { shard.restore(&users[i]) }
        for d in try store.dueReports() { shard.addDue(WeeklyReports.Due(user: d.user, week: try #require(ISOWeek(parsing: d.week)))) }
        if let weeksPerAttempt { shard.reportWorker.maxWeeksPerAttempt = weeksPerAttempt }
        shard.start()
        return shard
    }

    /// Feeds `records` (journal positions from `from`) and waits until the shard has committed them.
    static func feed(_ shard: Shard, _ records: [TrafficRecord], from: UInt64 = 1) {
        for (k, r) in records.enumerated() {
            shard.queue.push(.message(seq: from + UInt64(k), topic: r.topic, parsed: layout.parse(r.topic), payload: r.payload))
        }
        let done = DispatchSemaphore(value: 0)
        shard.queue.push(.barrier(done))
        done.wait()
    }

    /// The weeks that close in `records`' days (the Sundays before the last day).
    static func records(users: [String], seed: UInt64 = 7) -> [TrafficRecord] {
        users.enumerated().flatMap { k, u in BuiltinScenario.jamiePlateau.generator(user: u, seed: seed + UInt64(k)).generate().map(\.record) }
    }

    static func weeksDue(_ shard: Shard) -> Int { shard.stats.withLock { $0.weeklyReportsDue } }

    /// A week the worker cannot store stays due (its marker in the store) and is built once the
    /// store takes writes again and the backoff on the worker's clock is over, exactly once, in
    /// week order, without a new message — in attempts of at most `weeksPerAttempt` weeks, one
    /// after another.
    @Test func aWeekLeftDueByAFailingStoreIsBuiltOnceTheStoreRecovers() throws {
        let path = TemporaryPath.make("mw-report-worker")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let store = ControlledStore(try StateStore(path: path + "/state.sqlite"))
        let sink = Captured()
        store.refuse.store(true, ordering: .relaxed)
        let clock = ShardTests.ManualClock(wallMs: 1_796_083_200_000, step: 0)  // 2026-12-01: the story is in the past
        let shard = try Self.startShard(store, sink: sink, weeksPerAttempt: 5, clock: clock.clock)
        Self.feed(shard, Self.records(users: ["kim"]))
        #expect(eventually(timeout: 20) { store.refused.load(ordering: .relaxed) >= 1 })
        let due = try store.dueReports()
        #expect(due.count >= 12, "weeks due: \(due.count)")
        #expect(sink.weeks(of: "kim").isEmpty)
        #expect(eventually(timeout: 10) { Self.weeksDue(shard) == due.count })

        store.refuse.store(false, ordering: .relaxed)  // the disk is back; no message comes
        let attempts = store.refused.load(ordering: .relaxed)
        // The backoff is over. The clock moves on while the test waits, as a real one does: the
        // worker may read it for its backoff only after the first refusal was counted here, and
        // a single step taken before that read would leave its next attempt in the future.
        #expect(
            eventually(timeout: 40) {
                clock.advance(nanoseconds: ReportWorker.longestBackoffNs)
                return (try? store.dueReports().isEmpty) == true && Self.weeksDue(shard) == 0
            })
        let published = sink.weeks(of: "kim")
        #expect(published == due.map(\.week), "published \(published), due \(due.map(\.week))")
        #expect(try store.reportWeeks(of: "kim") == due.map(\.week).reversed())
        #expect(shard.stats.withLock { $0.weeklyReports } == due.count)
        #expect(store.stored.load(ordering: .relaxed) >= (due.count + 4) / 5, "\(store.stored.load(ordering: .relaxed)) report commits for \(due.count) weeks")
        #expect(store.refused.load(ordering: .relaxed) == attempts, "no attempt failed once the store took writes again")
        shard.queue.close()
        shard.join()
    }

    /// Stopping while the worker holds weeks: it makes one last attempt before the shard's thread
    /// ends. Built then (`refusesAtStop` false) or left due for the next start (true): either way
    /// every week is built exactly once over the two runs, each user's in week order.
    @Test(arguments: [false, true]) func stoppingWhileTheWorkerHoldsWeeksBuildsEachWeekOnce(refusesAtStop: Bool) throws {
        let path = TemporaryPath.make("mw-report-worker")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let store = ControlledStore(try StateStore(path: path + "/state.sqlite"))
        let users = ["ana", "ben", "cy"]
        let records = Self.records(users: users)
        let first = Captured()
        store.hold.store(true, ordering: .relaxed)  // the worker's first commit of reports waits
        let shard = try Self.startShard(store, sink: first)
        Self.feed(shard, Array(records.prefix(records.count / 2)))
        #expect(eventually(timeout: 20) { store.holding.load(ordering: .relaxed) })
        Self.feed(shard, Array(records.dropFirst(records.count / 2)), from: UInt64(records.count / 2) + 1)
        #expect(Self.weeksDue(shard) > 0, "the worker holds weeks as the shard stops")
        store.hold.store(false, ordering: .relaxed)
        store.refuse.store(refusesAtStop, ordering: .relaxed)
        shard.queue.close()
        store.gate.signal()
        shard.join()  // the worker's last attempt is over
        let left = try store.dueReports()
        #expect(refusesAtStop ? !left.isEmpty : left.isEmpty, "\(left.count) weeks left due")

        store.refuse.store(false, ordering: .relaxed)
        let second = Captured()
        let restarted = try Self.startShard(store, sink: second)
        #expect(eventually(timeout: 30) { (try? store.dueReports().isEmpty) == true && Self.weeksDue(restarted) == 0 })
        restarted.queue.close()
        restarted.join()
        #expect(restarted.stats.withLock { $0.weeklyReports } == left.count)
        for u in users {
            let kept = try store.reportWeeks(of: u).reversed().map { $0 }
            #expect(kept.count >= 12, "\(u): \(kept.count) weeks")
            // Each week once over both runs, in week order within each run.
            let once = first.weeks(of: u) + second.weeks(of: u)
            #expect(once.sorted() == kept, "\(u): published \(once), kept \(kept)")
            #expect(first.weeks(of: u) == first.weeks(of: u).sorted() && second.weeks(of: u) == second.weeks(of: u).sorted())
        }
    }

    /// A user moves from ward-a to ward-b while the worker is storing the user's reports with the
    /// old team: the shard waits for that attempt before it clears ward-a's topic and takes back the
    /// weeks not built yet, so ward-a keeps no report and ward-b ends with the latest one.
    @Test func aTeamChangeWhileTheWorkerHoldsWeeksReachesOnlyTheNewTeam() throws {
        let path = TemporaryPath.make("mw-report-worker")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let store = ControlledStore(try StateStore(path: path + "/state.sqlite"))
        let sink = Captured()
        func withTeams(_ r: TrafficRecord, _ team: String) -> TrafficRecord {
            var r = r
            r.payload = Array(String(decoding: r.payload.dropLast(), as: UTF8.self).utf8) + Array(",\"careTeams\":[\"\(team)\"]}".utf8)
            return r
        }
        let profileTopic = Self.layout.profile("kim")
        var records = Self.records(users: ["kim"])
        let profile = try #require(records.first { $0.topic == profileTopic })
        records = records.map { $0.topic == profileTopic ? withTeams($0, "ward-a") : $0 }
        store.hold.store(true, ordering: .relaxed)
        let shard = try Self.startShard(store, sink: sink)
        Self.feed(shard, records)
        #expect(eventually(timeout: 20) { store.holding.load(ordering: .relaxed) })
        #expect(Self.weeksDue(shard) > 0)

        let moved = DispatchSemaphore(value: 0)
        shard.queue.push(
            .message(
                seq: UInt64(records.count) + 1, topic: profileTopic, parsed: Self.layout.parse(profileTopic), payload: withTeams(profile, "ward-b").payload))
        shard.queue.push(.barrier(moved))
        // The profile's batch waits for the worker's attempt under way (its reports carry ward-a).
        let waited = moved.wait(timeout: .now() + 1) == .timedOut
        #expect(waited, "the team change did not wait for the reports being stored")
        store.hold.store(false, ordering: .relaxed)
        store.gate.signal()
        if waited { moved.wait() }
        #expect(eventually(timeout: 30) { (try? store.dueReports().isEmpty) == true && Self.weeksDue(shard) == 0 })
        shard.queue.close()
        shard.join()

        let items = sink.items.withLock { $0 }
        let a = items.filter { $0.topic == Self.layout.teamWeeklyReport("ward-a", user: "kim") }
        let b = items.filter { $0.topic == Self.layout.teamWeeklyReport("ward-b", user: "kim") }
        let latest = try #require(items.last { $0.topic == Self.layout.weeklyReport("kim") })
        #expect(!a.isEmpty && a.last?.payload == [], "ward-a's report topic ends cleared: \(a.map(\.payload.count))")
        #expect(b.last?.payload == latest.payload, "ward-b ends with the latest report")
        #expect(try store.weeklyReport(of: "kim", week: nil)?.payload == latest.payload)
    }
}

/// The daemon end to end (real mosquitto, real SQLite): many users' weeks closing together are
/// all built by the report workers, each user's in week order, each once, kept and published.
@Suite(.serialized) struct ReportWorkerDaemonTests {
    @Test func everyUsersWeeksArePublishedCompleteAndInWeekOrder() throws {
        let users = (0..<8).map { "pat-\($0)" }
        let perUser = users.enumerated().map { k, u in BuiltinScenario.jamiePlateau.generator(user: u, seed: 11 + UInt64(k)).generate().map(\.record) }
        // Interleaved, so that the users' Sundays close in the same batches.
        var records: [TrafficRecord] = []
        for i in 0..<(perUser.map(\.count).max() ?? 0) { for r in perUser where i < r.count { records.append(r[i]) } }
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-report-worker")
        defer { try? FileManager.default.removeItem(atPath: state) }
        var daemon: DaemonUnderTest? = try DaemonUnderTest(broker: broker, state: state, extra: ["--shards", "2"])
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/reports/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for r in records { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon!.waitProcessed(records.count, timeout: 120))
        #expect(daemon!.waitIdle(timeout: 60))
        #expect(try rec.barrier())
        let built = daemon!.metric("mobilityd_weekly_reports_total") ?? 0
        #expect(daemon!.metric("mobilityd_weekly_reports_due") == 0)
        #expect(daemon!.process.stop() == 0)
        daemon = nil

        let store = try StateStore(path: state + "/state.sqlite")
        var total = 0
        for u in users {
            let weeks = rec.messages(prefix: "mobility/v1/users/\(u)/reports/weekly").compactMap { try? WeeklyDigest.decode($0.payload).get().week }
            total += weeks.count
            #expect(weeks.count >= 12, "\(u): \(weeks.count) reports")
            #expect(zip(weeks, weeks.dropFirst()).allSatisfy { $0 < $1 }, "\(u): \(weeks.map(\.description))")
            #expect(try store.reportWeeks(of: u) == weeks.map(\.description).reversed())
        }
        #expect(Double(total) == built, "\(total) reports, metric \(built)")
        #expect(try store.dueReports().isEmpty)
    }
}
