import Foundation
import StateStore
import Synchronization
import TestSupport
import Testing

@testable import PostgresStore

/// Leases on partitions in a real PostgreSQL: claims share the partitions, an unexpired lease is
/// never taken, an expired one is taken with a higher token, and the old owner is then fenced.
@Suite(.serialized) struct PartitionLeasesTests {
    @Test func claimsShareExpiryMovesAndTheOldOwnerIsFenced() throws {
        let url = try PostgresServer.shared().createDatabase()
        let a = try PartitionLeases(url: url, owner: "a", count: 4, leaseMs: 400)
        let b = try PartitionLeases(url: url, owner: "b", count: 4, leaseMs: 60_000)
        #expect(try a.heartbeat(holding: []).liveInstances == 1)
        let heldA = try a.claim(4)
        #expect(heldA.map(\.partition) == [0, 1, 2, 3] && heldA.allSatisfy { $0.token == 1 })
        #expect(try b.heartbeat(holding: []).liveInstances == 2)
        #expect(try b.claim(2).isEmpty)  // a's leases are alive
        // a gives two up for a rebalance; b takes exactly those, with new tokens.
        try a.release(Array(heldA.suffix(2)))
        let heldB = try b.claim(2)
        #expect(heldB.map(\.partition) == [2, 3] && heldB.allSatisfy { $0.token == 2 })
        let renewed = try a.heartbeat(holding: heldA)
        #expect(renewed.held.map(\.partition) == [0, 1])
        // a stops renewing: once its 400 ms lease ran out, b's claim takes partitions 0 and 1.
        var moved: [PartitionLeases.Lease] = []
        #expect(
            eventually(timeout: 10) {
                moved += (try? b.claim(2)) ?? []; return moved.count == 2
            })
        #expect(moved.map(\.partition) == [0, 1] && moved.allSatisfy { $0.token == 2 })
        #expect(try a.heartbeat(holding: Array(renewed.held)).held.isEmpty)  // lost, and said so
        // A store still running on a's tokens commits nothing.
        let stale = try PostgresStore(url: url, owner: "a", partitions: PartitionSet(count: 4, owned: [0, 1]), claimed: [1, 1])
        #expect {
            _ = try stale.commit(users: [], outbox: [.init(topic: "t", payload: [1], retain: false)], acknowledged: [], history: [])
        } throws: { ($0 as? PostgresError)?.code == .fenced }
        let fresh = try PostgresStore(url: url, owner: "b", partitions: PartitionSet(count: 4, owned: [0, 1, 2, 3]), claimed: [2, 2, 2, 2])
        #expect(try fresh.commit(users: [], outbox: [.init(topic: "t", payload: [1], retain: false)], acknowledged: [], history: []).count == 1)
        // Another partition count is refused.
        #expect(throws: PostgresError.self) { _ = try PartitionLeases(url: url, owner: "c", count: 8, leaseMs: 1000) }
    }
}

extension PartitionLeasesTests {
    /// An owner paused in the middle of a commit: its session holds a transaction open with the
    /// fence's locks on its partitions' rows, and the claim skips locked rows. Once its lease has
    /// run out and the session has waited on its client for a whole lease, a claimer ends that
    /// session and takes the partitions with a higher token; the paused commit, resumed, finds
    /// its connection ended.
    @Test func anOwnerPausedInsideACommitDoesNotKeepItsPartitions() throws {
        let url = try PostgresServer.shared().createDatabase()
        let a = try PartitionLeases(url: url, owner: "a@paused", count: 2, leaseMs: 500)
        let b = try PartitionLeases(url: url, owner: "b@live", count: 2, leaseMs: 500)
        let held = try a.claim(2)
        #expect(held.map(\.partition) == [0, 1])
        let store = try PostgresStore(url: url, owner: "a@paused", partitions: PartitionSet(count: 2, owned: [0, 1]), claimed: held.map(\.token))
        // The commit stops after its fence, the transaction open, as a SIGSTOP would leave it.
        let inside = DispatchSemaphore(value: 0), resume = DispatchSemaphore(value: 0), finished = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<Void, any Error>?>(nil)
        Thread {
            let r = Result {
                try store.fencedTransaction { _ in
                    inside.signal(); resume.wait()
                }
            }
            outcome.withLock { $0 = r }
            finished.signal()
        }.start()
        #expect(inside.wait(timeout: .now() + 10) == .success)
        var taken: [PartitionLeases.Lease] = []
        #expect(
            eventually(timeout: 15) {
                _ = try? b.heartbeat(holding: taken)
                taken += (try? b.claim(2)) ?? []
                return taken.count == 2
            }, "the paused owner's partitions were never taken")
        #expect(taken.map(\.partition) == [0, 1] && taken.allSatisfy { $0.token == 2 })
        resume.signal()
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect {
            try outcome.withLock { $0 }?.get()
        } throws: {
            ($0 as? PostgresError)?.code == .connection
        }
    }
}

extension PartitionLeasesTests {
    /// An owner's heartbeat (renewing its leases) and its fenced writes (a commit's fence,
    /// a partition's stream sequence committed) lock the same partition rows from two sessions:
    /// both take them in partition order, so they never deadlock — PostgreSQL's deadlock
    /// detection aborted a heartbeat after a second's wait, and with a short lease the partitions
    /// lapsed and were claimed away from a live owner. Here the two run side by side, rows
    /// rewritten all along (which reorders them on disk), and neither ever fails.
    @Test func aHeartbeatAndTheFencedWritesOfItsOwnerNeverDeadlock() throws {
        let url = try PostgresServer.shared().createDatabase()
        let leases = try PartitionLeases(url: url, owner: "a", count: 16, leaseMs: 60_000)
        _ = try leases.heartbeat(holding: [])
        let held = try leases.claim(16)
        #expect(held.count == 16)
        let store = try PostgresStore(url: url, owner: "a", partitions: PartitionSet(count: 16, owned: Array(0..<16)), claimed: held.map(\.token))
        // A second writing session on the same tokens, as a commit and a recorded sequence of one
        // owner can overlap on their own connections.
        let committer = try PostgresStore(url: url, owner: "a", partitions: PartitionSet(count: 16, owned: Array(0..<16)), claimed: held.map(\.token))
        let until = Date().addingTimeInterval(4)
        let failures = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        Thread {
            var seq: UInt64 = 0
            while Date() < until {
                seq += 1
                for k in [15, 3, 9, 0, 12, 6] {
                    do {
                        _ = try store.commit(users: [], outbox: [], acknowledged: [], history: [], audited: [], streamSequences: [k: seq])
                    } catch { failures.withLock { $0.append("write: \(error)") } }
                }
            }
            done.signal()
        }.start()
        Thread {
            var n = 0
            while Date() < until {
                n += 1
                do { try committer.setMeta("probe", String(n)) } catch { failures.withLock { $0.append("commit: \(error)") } }
            }
            done.signal()
        }.start()
        var beats = 0
        while Date() < until {
            do {
                let kept = try leases.heartbeat(holding: held.shuffled()).held
                if kept.count != 16 { failures.withLock { $0.append("heartbeat kept \(kept.count)") } }
            } catch { failures.withLock { $0.append("heartbeat: \(error)") } }
            beats += 1
        }
        done.wait()
        done.wait()
        #expect(beats > 10)
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(5) })")
    }
}
