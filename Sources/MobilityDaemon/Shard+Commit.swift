import Foundation
import RuleEngine
import StateStore

// The shard's last stages: the commit policy, the commit and the publish of what it committed,
// the gateways' acknowledgements, and the batch's counts.
extension Shard {
    /// What a batch's commit did.
    struct CommitResult {
        /// Whether a commit was tried (the policy may hold the batch for a later one), and whether it succeeded.
        var tried = false, succeeded = false
        /// Publishes libmosquitto refused.
        var publishFailures = 0
        /// Series messages the commit made durable and published.
        var seriesMessages = 0
    }

    /// What the batch commits, by the policy: series wait for the interval's commit (nobody waits
    /// for them); other outputs, staff changes and team changes commit now.
    func commitScope(_ out: [EngineOutput], batch: Batch, now: UInt64) -> ShardCommitPolicy.Scope {
        let urgent = batch.teamsChanged || !pendingAudited.isEmpty || out.contains { !$0.isSeries }
        if !urgent && !out.isEmpty { deferredUsers.formUnion(batchUsers) }
        let scope = policy.batchProcessed(
            outputs: urgent, deferred: !pending.outbox.isEmpty || !deferredUsers.isEmpty, barrier: !batch.barriers.isEmpty,
            pendingUsers: pendingUsers.count, awaitingWaiter: awaitingWaiter, backlog: backlogWaiting, now: now)
        if scope == .batch { batchUsers.formUnion(deferredUsers) }  // the waiting series' users, with their outputs
        // Taken by this attempt; a failed one is retried at the interval's pace, not at every item.
        if scope == .all { backlogWaiting = false }
        return scope
    }

    /// Group commit: with scope `.none` these changes go with a later batch's (the journal, or a
    /// partition's stream, holds their messages meanwhile). Once committed, the outputs are published, the journal up to
    /// `q` may be released, the partition sessions waiting are answered, due reports handed on,
    /// and the gateways' acknowledgements published when the policy says.
    func commitAndPublish(_ scope: ShardCommitPolicy.Scope, through q: UInt64, now: UInt64) -> CommitResult {
        guard scope != .none else { return CommitResult() }
        guard let items = commit(all: scope == .all) else {
            policy.commitFailed()
            return CommitResult(tried: true)
        }
        var result = CommitResult(tried: true, succeeded: true)
        let done = policy.commitSucceeded(pendingUsersLeft: pendingUsers.count)
        if done.releaseJournal { committedThrough.store(q, ordering: .relaxed) }
        if scope == .all {
            for w in durables { w.committed() }
            durables.removeAll(keepingCapacity: true)
        }
        if !items.isEmpty { result.publishFailures = sink.publish(items) }
        result.seriesMessages = pending.seriesMessages
        pending.seriesMessages = 0
        if !outputs.markers.due.isEmpty && pending.history.isEmpty {
            handReports()  // their markers are durable
        } else if reportWorker.isFailing {
            reportWorker.poke()  // the store takes commits again: the worker's weeks are tried again
        }
        // Durable now: tell gateways how far each user's samples are committed — coalesced:
        // at most one retained ack per user per interval (an ack per message would double
        // the broker's load at one sample per message).
        acksDurable(done.durableAcks)
        if policy.acknowledgementsDurable(waiting: acknowledge != nil && !committedAcks.isEmpty, now: now) { publishAcks() }
        return result
    }

    /// Adds the batch to the shard's counters (read by `/metrics` and `/healthz`).
    func count(_ batch: Batch, _ out: [EngineOutput], _ result: CommitResult, evaluated: Double, took: Double) {
        stats.withLock { s in
            s.batches += 1
            s.evaluationSeconds += evaluated
            s.longestBatchSeconds = max(s.longestBatchSeconds, took)
            s.ingest = ingestor.counters
            s.users = ingestor.engine.userCount
            s.publishErrors += result.publishFailures
            s.seriesPublished += result.seriesMessages
            s.outputsUncommitted = pending.outbox.count
            s.replayed += batch.replayed
            s.reportsDueInShard = outputs.markers.due.count
            if result.tried {
                s.storeHealthy = result.succeeded
                if result.succeeded { s.commits += 1 } else { s.commitFailures += 1 }
            }
            for o in out {
                switch o {
                case .alert(let a):
                    if a.isRepeat { s.repeats[a.rule, default: 0] += 1; continue }
                    s.alerts[a.rule, default: [:]][a.status, default: 0] += 1
                case .series: break
                case .rejected: break
                }
            }
        }
    }

    /// Moves the pending acknowledgements of the users just committed (everyone's, or this batch's) to the durable ones.
    private func acksDurable(_ scope: ShardCommitPolicy.Scope) {
        if scope == .all {
            if acknowledge != nil { for (u, id) in pendingAcks { committedAcks[u] = id } }
            pendingAcks.removeAll(keepingCapacity: true)
        } else {
            for u in batchUsers { if let id = pendingAcks.removeValue(forKey: u), acknowledge != nil { committedAcks[u] = id } }
        }
    }

    /// Publishes the coalesced durable acknowledgements (the policy said when).
    func publishAcks() {
        guard let acknowledge else { return }
        for (u, id) in committedAcks { acknowledge(u, id) }
        committedAcks.removeAll(keepingCapacity: true)
    }

    /// Commits pending users and outputs with the acknowledged outbox ids; returns the committed
    /// outbox items (with ids), or nil when the store refused (everything stays pending).
    /// - Parameter all: every pending user, or only this batch's (the users whose changes
    ///   produced this batch's outputs: an alert is not held up by a commit of everyone else).
    func commit(all: Bool = true) -> [StateStore.OutboxItem]? {
        let acked = acks.drain()
        let users = all ? pendingUsers : batchUsers
        // The partitions' stream positions the waiters carry (committed for them only with everyone).
        var streamSequences: [Int: UInt64] = [:]
        if all { for case let (k, seq)? in durables.lazy.map(\.streamSequence) { streamSequences[k] = max(streamSequences[k] ?? 0, seq) } }
        if users.isEmpty && pending.outbox.isEmpty && acked.isEmpty && pending.history.isEmpty && pendingAudited.isEmpty && streamSequences.isEmpty {
            return []
        }
        let records = users.map { u in
            StateStore.UserRecord(
                user: u, appliedSeq: applied[u, default: 0], eventNow: ingestor.clocks[u]?.now,
                eventClaims: ingestor.clocks[u]?.claims ?? [], state: ingestor.engine.changes(of: u))
        }
        do {
            let ids: [Int64], announced: [StateStore.OutboxItem]
            if pendingAudited.isEmpty && streamSequences.isEmpty {
                ids = try store.commit(users: records, outbox: pending.outbox, acknowledged: acked, history: pending.history)
                announced = []
            } else {
                (ids, announced) = try store.commit(
                    users: records, outbox: pending.outbox, acknowledged: acked, history: pending.history, audited: pendingAudited,
                    streamSequences: streamSequences)
            }
            // Moved out, not copied: assigning the ids to a copy of the pending array copied every item.
            var items: [StateStore.OutboxItem] = []
            swap(&items, &pending.outbox)
            pending.outbox.reserveCapacity(items.count)
            for k in items.indices { items[k].id = ids[k] }
            items += announced
            pendingAudited.removeAll()
            for a in pendingAnswers { a.committed() }
            pendingAnswers.removeAll()
            for u in users { ingestor.engine.markPersisted(u) }
            timelines?.noteCalendars(of: users, in: ingestor.engine)
            if all { pendingUsers.removeAll(keepingCapacity: true) } else { pendingUsers.subtract(users) }
            deferredUsers.removeAll(keepingCapacity: true)  // their outputs are committed (all or with this batch)
            pending.outbox.removeAll(keepingCapacity: true)
            pending.history.removeAll(keepingCapacity: true)
            return items
        } catch {
            acks.restore(acked)
            if isFencedWrite(error), let onFenced {
                onFenced()  // the run stops (logged once there); its outputs are never published
                return nil
            }
            log.error("state commit failed; holding outputs until the store accepts them", ["shard": String(index), "error": "\(error)"])
            return nil
        }
    }
}
