import Foundation
import MobilityModel
import PostgresStore
import StateStore
import TestSupport
import Testing

@testable import RuleEngine

/// Ownership of partitions: an instance that lost its partitions to another (a higher token)
/// cannot write anything, whatever it tries, and the new owner sees none of it.
@Suite struct FencingTests {
    @Test func aTakenOverOwnerCannotCommitAndWritesNothing() throws {
        let server = try PostgresServer.shared()
        let url = try server.createDatabase()
        let engine = try Engines.populated()
        let first = try PostgresStore(url: url, owner: "instance-a")
        #expect(first.tokens == [1] && first.partitions == .all)
        let committed = try first.commit(
            users: [.init(user: "u", appliedSeq: 1, eventNow: nil, state: engine.changes(of: "u"))],
            outbox: [.init(topic: "t/1", payload: [1], retain: false)], acknowledged: [], history: [])
        // A second instance takes the partition over: token + 1.
        let second = try PostgresStore(url: url, owner: "instance-b")
        #expect(second.tokens == [2])
        #expect(try server.psql("SELECT owner || ' ' || token FROM partitions", database: String(url.split(separator: "/").last!)) == "instance-b 2")
        // Every write of the old owner fails as fenced…
        func fenced(_ body: () throws -> Void) -> Bool {
            do {
                try body()
                return false
            } catch let e as PostgresError {
                // The daemon tells it apart through the backend protocol, not PostgresError.
                return e.code == .fenced && e.sqlState == PostgresError.fencedSQLState && isFencedWrite(e)
            } catch { return false }
        }
        #expect(
            fenced {
                _ = try first.commit(
                    users: [
                        .init(user: "u", appliedSeq: 99, eventNow: Timestamp(seconds: 5), state: engine.snapshot(of: "u")),
                        .init(user: "intruder", appliedSeq: 1, eventNow: nil, state: nil)
                    ],
                    outbox: [.init(topic: "t/2", payload: [2], retain: false)], acknowledged: committed,
                    history: [HistoryRecord(user: "u", kind: .weekly, key: "2026-W10", day: 1)])
            })
        #expect(fenced { try first.acknowledge(committed) })
        #expect(fenced { try first.setMeta("rules_identity", "stale") })
        #expect(fenced { _ = try first.park([(committed[0], "x")], at: 1) })
        #expect(fenced { try first.clearAcknowledgements(["a"]) })
        #expect(fenced { _ = try first.pruneHistory([(user: "u", keepFrom: 10, reportsFrom: 10)]) })
        let ack = StoredAcknowledgement(
            alert: "a", user: "u", rule: "slow", team: "t", acknowledgement: AlertAcknowledgement(by: "x", at: Timestamp(seconds: 1), note: nil), payload: [])
        #expect(
            fenced {
                _ = try first.recordAcknowledgement(
                    ack,
                    audit: AuditEntry(at: Timestamp(seconds: 1), action: "acknowledge", actor: "x", team: "t", user: "u", rule: "slow", subject: "a", note: nil)
                ) { _ in [] }
            })
        // …and nothing of it is written: the new owner reads what the old one committed before.
        let (users, outbox) = try second.load(alertNames: [], prepare: { $0 })
        #expect(users.map(\.user) == ["u"] && users[0].appliedSeq == 1 && users[0].eventNow == nil)
        #expect(outbox.map(\.topic) == ["t/1"])
        #expect(
            try second.meta("rules_identity") == nil && second.deadLetters().isEmpty && second.dueReports().isEmpty && second.alertAcknowledgements().isEmpty)
        // The new owner commits; reads still work for the old one (they are not fenced).
        _ = try second.commit(users: [.init(user: "u", appliedSeq: 2, eventNow: nil, state: nil)], outbox: [], acknowledged: committed, history: [])
        #expect(try first.meta("partition_count") == "1")
        #expect(try PostgresStore(url: url, owner: "instance-c").load(alertNames: [], prepare: { $0 }).outbox.isEmpty)
    }

    /// A commit that fails in a later statement of its pipeline (here: text PostgreSQL refuses)
    /// writes nothing of the earlier ones: one transaction.
    @Test func aCommitFailingHalfwayWritesNothing() throws {
        let url = try PostgresServer.shared().createDatabase()
        let store = try PostgresStore(url: url, owner: "a")
        #expect(throws: PostgresError.self) {
            _ = try store.commit(
                users: [.init(user: "u", appliedSeq: 1, eventNow: nil, state: nil)], outbox: [.init(topic: "bad\u{0}topic", payload: [], retain: false)],
                acknowledged: [], history: [])
        }
        let (users, outbox) = try store.load(alertNames: [], prepare: { $0 })
        #expect(users.isEmpty && outbox.isEmpty)
        // The connection is usable after the failure.
        _ = try store.commit(users: [.init(user: "u", appliedSeq: 1, eventNow: nil, state: nil)], outbox: [], acknowledged: [], history: [])
        #expect(try store.load(alertNames: [], prepare: { $0 }).users.count == 1)
    }

    /// A partition's stream sequence is committed with the users' state, in the same fenced
    /// transaction: a commit that fails writes neither, one taken over writes neither, and a
    /// recorded sequence never moves back (a late commit of an earlier batch).
    @Test func aStreamSequenceIsCommittedWithTheStateOrNotAtAll() throws {
        let url = try PostgresServer.shared().createDatabase()
        let parts = PartitionSet(count: 4, owned: [1, 2])
        let leases = try PartitionLeases(url: url, owner: "a", count: 4, leaseMs: 60_000)
        _ = try leases.heartbeat(holding: [])
        let all = try leases.claim(4)
        let held = all.filter { parts.owned.contains($0.partition) }.sorted { $0.partition < $1.partition }
        let store = try PostgresStore(url: url, owner: "a", partitions: parts, claimed: held.map(\.token))
        let user = (0..<100).map { "u\($0)" }.first { parts.partition(of: $0) == 1 }!
        func commit(_ seq: UInt64, applied: UInt64, topic: String = "t") throws {
            _ = try store.commit(
                users: [.init(user: user, appliedSeq: applied, eventNow: nil, state: nil)], outbox: [.init(topic: topic, payload: [], retain: false)],
                acknowledged: [], history: [], audited: [], streamSequences: [1: seq, 2: seq + 1])
        }
        try commit(40, applied: 40)
        #expect(try store.streamMarks().mapValues(\.sequence) == [1: 40, 2: 41])
        try commit(30, applied: 41)
        #expect(try store.streamMarks().mapValues(\.sequence) == [1: 40, 2: 41])
        #expect(throws: PostgresError.self) { try commit(50, applied: 50, topic: "bad\u{0}topic") }
        #expect(try store.streamMarks().mapValues(\.sequence) == [1: 40, 2: 41])
        #expect(try store.load(alertNames: [], prepare: { $0 }).users.map(\.appliedSeq) == [41])
        // Taken over: the old owner's commit is fenced and records nothing.
        let b = try PartitionLeases(url: url, owner: "b", count: 4, leaseMs: 60_000)
        _ = try b.heartbeat(holding: [])
        try leases.release(all)
        #expect(try b.claim(4).count == 4)
        #expect(throws: PostgresError.self) { try commit(60, applied: 60) }
        let recorded = try PostgresServer.shared().psql(
            "SELECT string_agg(stream_seq::text, ' ' ORDER BY partition) FROM partitions", database: String(url.split(separator: "/").last!))
        #expect(recorded == "0 40 41 0")
    }

    /// A database divided into another number of partitions is refused, not misread.
    @Test func anotherPartitionCountIsRefused() throws {
        let url = try PostgresServer.shared().createDatabase()
        _ = try PostgresStore(url: url, owner: "a")
        #expect {
            _ = try PostgresStore(url: url, owner: "b", partitions: PartitionSet(count: 64, owned: [3, 4]))
        } throws: { ($0 as? PostgresError)?.code == .schema }
    }

    /// A lost connection (the server restarted) is re-established by the next commit, with the
    /// same token: the partition is still this instance's.
    @Test func aRestartedServerIsReconnectedTo() throws {
        let server = try PostgresServer()
        let url = try server.createDatabase()
        let store = try PostgresStore(url: url, owner: "a")
        _ = try store.commit(users: [.init(user: "u", appliedSeq: 1, eventNow: nil, state: nil)], outbox: [], acknowledged: [], history: [])
        server.stop()
        #expect(throws: PostgresError.self) {
            _ = try store.commit(users: [], outbox: [.init(topic: "t", payload: [], retain: false)], acknowledged: [], history: [])
        }
        try server.start()
        let ids = try store.commit(
            users: [.init(user: "u", appliedSeq: 2, eventNow: nil, state: nil)], outbox: [.init(topic: "t", payload: [], retain: false)], acknowledged: [],
            history: [])
        #expect(ids.count == 1)
        #expect(try store.load(alertNames: [], prepare: { $0 }).users.map(\.appliedSeq) == [2])
    }
}

/// What a PostgreSQL URL may hold.
@Suite struct PostgresURLTests {
    @Test func aPasswordInTheURLIsRefused() throws {
        #expect { _ = try PostgresURL.check("postgres://mw:secret@127.0.0.1:5432/db", environment: [:]) } throws: {
            let e = $0 as? PostgresError
            return e?.code == .configuration && e?.description.contains("PGPASSFILE") == true && e?.description.contains("secret") == false
        }
        #expect(throws: PostgresError.self) { _ = try PostgresURL.check("host=127.0.0.1 password=secret dbname=db", environment: [:]) }
        // From the environment it is libpq's business (PGPASSWORD), not the URL's.
        #expect(try PostgresURL.check("postgres://mw@127.0.0.1:5432/db", environment: ["PGPASSWORD": "secret"]) == "postgres://127.0.0.1:5432/db")
    }

    @Test func offTheLoopbackTLSMustVerifyTheServer() throws {
        for url in ["postgres://mw@db.example.org/state", "postgres://mw@10.0.0.5/state?sslmode=require", "postgres://mw@db.example.org/state?sslmode=prefer"] {
            #expect(throws: PostgresError.self, "\(url)") { _ = try PostgresURL.check(url, environment: [:]) }
        }
        #expect(throws: PostgresError.self) { _ = try PostgresURL.check("postgres:///state", environment: ["PGHOST": "db.example.org"]) }
        _ = try PostgresURL.check("postgres://mw@db.example.org/state?sslmode=verify-full", environment: [:])
        _ = try PostgresURL.check("postgres://mw@db.example.org/state", environment: ["PGSSLMODE": "verify-ca"])
        for url in [
            "postgres://mw@127.0.0.1:5433/state", "postgres://mw@localhost/state", "postgres://mw@[::1]/state", "postgres:///state?host=/run/postgresql"
        ] {
            _ = try PostgresURL.check(url, environment: [:])
        }
        #expect(throws: PostgresError.self) { _ = try PostgresURL.check("postgres://mw@127.0.0.1,db.example.org/state", environment: [:]) }
        #expect(throws: PostgresError.self) { _ = try PostgresURL.check("not a url = =", environment: [:]) }
    }
}
