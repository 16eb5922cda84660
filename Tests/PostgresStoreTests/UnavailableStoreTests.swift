import Foundation
import PostgresStore
import StateStore
import TestSupport
import Testing

/// A store that does not answer is told apart from one that refuses: the daemon starts a
/// partitioned run again once the store answers after the first, and stops on the second.
@Suite struct UnavailableStoreTests {
    @Test func aStoppedServerIsUnavailableAndAFencedWriteIsNot() throws {
        let server = try PostgresServer()  // its own: the test stops it
        let url = try server.createDatabase()
        let store = try PostgresStore(url: url, owner: "instance-a")
        _ = try PostgresStore(url: url, owner: "instance-b")  // takes the partition over
        do {
            _ = try store.commit(users: [], outbox: [.init(topic: "t/1", payload: [1], retain: false)], acknowledged: [], history: [])
            Issue.record("a taken-over owner committed")
        } catch {
            #expect(isFencedWrite(error) && !isUnavailableStore(error), "\(error)")
        }
        server.stop()
        do {
            _ = try store.meta("rules_identity")
            Issue.record("a stopped server answered")
        } catch {
            #expect(isUnavailableStore(error) && !isFencedWrite(error), "\(error)")
        }
        do {
            _ = try PostgresStore(url: url, owner: "instance-c")
            Issue.record("a stopped server was connected to")
        } catch {
            #expect(isUnavailableStore(error), "\(error)")
        }
    }

    @Test func aStatementRefusedIsNotUnavailable() {
        #expect(!PostgresError.statement("relation does not exist", sqlState: "42P01").isUnavailable)
        #expect(PostgresError.statement("terminating connection due to administrator command", sqlState: "57P01").isUnavailable)
        #expect(PostgresError.statement("the database system is starting up", sqlState: "57P03").isUnavailable)
        #expect(PostgresError.statement("connection failure", sqlState: "08006").isUnavailable)
        #expect(!PostgresError.schema("newer schema").isUnavailable)
    }
}

extension UnavailableStoreTests {
    /// A server that answers but refuses the session (a role that does not exist: the same for
    /// a wrong password or a `pg_hba.conf` rejection) is not an outage: restarting the run
    /// would never help.
    @Test func aRefusedLoginIsNotUnavailable() throws {
        let server = try PostgresServer.shared()
        let url = try server.createDatabase()
        let wrong = url.replacingOccurrences(of: "postgres://mw@", with: "postgres://nobody_here@")
        #expect(wrong != url)
        do {
            _ = try PostgresStore(url: wrong, owner: "instance-a")
            Issue.record("a role that does not exist was let in")
        } catch {
            #expect(error.code == .connection && error.serverAnswered && !isUnavailableStore(error), "\(error)")
        }
    }
}
