import Foundation
import Ingest
import MobilityModel
import MobilityWire
import RuleEngine

// The shard's first stage: items taken from its queue into the engine.
extension Shard {
    /// What one batch took, beyond the engine's outputs, for the stages after ingest.
    struct Batch {
        /// The wall clock when the batch started (one read per batch, not per message).
        let wall: Timestamp
        /// Waiters to wake once the batch is committed or not (``ShardItem/barrier(_:)``).
        var barriers: [DispatchSemaphore] = []
        /// Journal records skipped because their user's state had applied them before a restart.
        var replayed = 0
        /// Whether a profile changed a user's care teams (their team outputs are urgent).
        var teamsChanged = false
        var budget = BatchBudget()
        /// The last journal position taken.
        var lastSeq: UInt64 = 0
    }

    /// Takes items from `taken` (from `next` on, moving each out) into the engine until the take
    /// is through or the batch's budget is spent; the engine's outputs go to `out`.
    func ingest(_ taken: inout [ShardItem], from next: inout Int, batch: inout Batch, into out: inout [EngineOutput]) {
        batchUsers.removeAll(keepingCapacity: true)
        while next < taken.count, !batch.budget.spent {
            // Moved out of the take (a copy retains every string and array of the item, and
            // emptying the array would release them again).
            var item = ShardItem.housekeeping
            swap(&item, &taken[next])
            next += 1
            switch consume item {
            case .message(let seq, let topic, let parsed, let payload):
                awaitingWaiter = journal == nil
                batch.budget.message(bytes: payload.count)
                if seq > 0 { batch.lastSeq = seq }
                var user: String?
                if case .inbound(let u, _) = parsed { user = u }
                guard case .next(let position) = journalPosition(seq: seq, user: user) else { batch.replayed += 1; continue }
                // What an events message changes of the timeline is recorded (and its FHIR
                // copies published): the entries it recorded or replaced, and those it retracted.
                var timelineBefore: [TimelineEvent]?
                if recordsHistory || outputs.fhir != nil, case .inbound(let u, .events) = parsed { timelineBefore = ingestor.engine.timeline(of: u) }
                ingestor.handle(topic: topic, parsed: parsed, payload: payload, now: batch.wall, into: &out)
                if case .inbound(let u, .profile) = parsed, !payload.isEmpty { batch.teamsChanged = profileTeams(u, payload) || batch.teamsChanged }
                handled(seq: seq, user: user, position: position)
                if let before = timelineBefore, let u = user { timelineChanged(u, before: before) }
            case .decodedSamples(let seq, let topic, let user, let samples):
                awaitingWaiter = journal == nil
                batch.budget.message(bytes: BatchBudget.bytesPerDecodedSample * ((try? samples.get())?.count ?? 0))
                if seq > 0 { batch.lastSeq = seq }
                guard case .next(let position) = journalPosition(seq: seq, user: user) else { batch.replayed += 1; continue }
                ingestor.handle(decodedSamples: samples, user: user, topic: topic, now: batch.wall, into: &out)
                handled(seq: seq, user: user, position: position)
            case .oversized(let topic, let parsed, let size):
                awaitingWaiter = journal == nil
                ingestor.rejectOversized(topic: topic, parsed: parsed, size: size, into: &out)
            case .retained(let topic, let parsed):
                awaitingWaiter = journal == nil
                ingestor.rejectRetained(topic: topic, parsed: parsed, into: &out)
            case .tick(let now): ingestor.tick(now: now, into: &out)
            case .reload(let p):
                ingestor.engine.reload(p, now: batch.wall, into: &out)  // resolves the removed rules' firing alerts
                outputs.markers.reload(p)
                outputs.fhir?.reload(p)
            case .housekeeping: break
            case .barrier(let s):
                batch.barriers.append(s)
                awaitingWaiter = false  // everything before it is committed with it, as with a waiter
            case .durable(let w):
                durables.append(w)
                awaitingWaiter = false
                backlogWaiting = backlogWaiting || w.backlog
            case .acknowledge(let c, let taken):
                let outcome = desk?.acknowledge(c, instance: ingestor.engine.firingInstance(user: c.user, id: c.alert), now: batch.wall)
                taken?.give(outcome ?? .refused(reason: "store_unavailable", message: "this daemon takes no acknowledgements"))
            case .timeline(let r):
                guard let timelines else {
                    r.answer.refuse(.init("store_unavailable", "this daemon takes no timeline commands", id: r.command.change.id, user: r.command.user))
                    continue
                }
                if let applied = timelines.apply(r, ingestor: &ingestor, wall: batch.wall, fhir: outputs.fhir, into: &out) {
                    if recordsHistory { pending.history.append(applied.history) }
                    pendingAudited.append(applied.change)
                    pendingAnswers.append(r.answer)
                }
            }
        }
    }

    /// Where a journalled message stands against its user's journal position.
    private enum JournalPosition {
        /// Applied before a restart: skipped.
        case applied
        /// To apply; the index of the user's position when the user has one (one hash of the
        /// user for reading and moving it).
        case next(Dictionary<String, UInt64>.Index?)
    }

    @inline(__always)
    private func journalPosition(seq: UInt64, user: String?) -> JournalPosition {
        guard seq > 0, let u = user, let p = applied.index(forKey: u) else { return .next(nil) }
        return seq <= applied.values[p] ? .applied : .next(p)
    }

    /// After a message was handled: moves its user's journal position, notes the user as changed
    /// by the batch, and the last sample id to acknowledge after the commit that applies it
    /// (docs/mqtt-api.md).
    @inline(__always)
    private func handled(seq: UInt64, user: String?, position: Dictionary<String, UInt64>.Index?) {
        guard let u = user else { return }
        if seq > 0 {
            if let position { applied.values[position] = seq } else { applied[u] = seq }
            batchUsers.insert(u)
        }
        if let id = ingestor.lastMessageSampleID { pendingAcks[u] = id }
    }

    /// Records what an events message changed of `user`'s timeline (`before`: the timeline before
    /// it): the entries it recorded or replaced, and the removal of those it retracted, in the
    /// history and, with `--fhir on`, as Observations. Entries it left as they were keep their rows
    /// (and the attribution of the staff who entered them).
    private func timelineChanged(_ user: String, before: [TimelineEvent]) {
        let after = ingestor.engine.timeline(of: user)
        guard after != before else { return }
        let held = Dictionary(before.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let kept = Set(after.map(\.id))
        for e in after where held[e.id] != e {
            if recordsHistory { pending.history.append(.timeline(user: user, e)) }
            if let fhir = outputs.fhir { pending.outbox += fhir.timelineItems(user: user, entry: e, retracted: false) }
        }
        for e in before where !kept.contains(e.id) {
            if recordsHistory { pending.history.append(.retracted(user: user, id: e.id)) }
            if let fhir = outputs.fhir { pending.outbox += fhir.timelineItems(user: user, entry: e, retracted: true) }
        }
    }

    /// Applies the care teams of an accepted profile (the ingestor rejected a bad one, and counted
    /// it); returns whether the change queued team outputs.
    private func profileTeams(_ user: String, _ payload: [UInt8]) -> Bool {
        guard case .success(let p) = ingestor.decoder.userProfile(payload) else { return false }
        // The user's teams change: the weeks the worker holds come back here, after its attempt under
        // way, and are handed over again with the new teams after this batch's commit.
        if (outputs.teams.careTeams.assigned[user] ?? p.careTeams) != outputs.teams.careTeams.teams(of: user) {
            for d in reportWorker.withdraw(user: user) { outputs.markers.due.insert(d) }
        }
        let hasReports = outputs.markers.reports != nil, store = store
        let items = outputs.teams.profileTeams(p.careTeams, user: user, rules: ingestor.engine.alertNames) {
            guard hasReports else { return nil }
            return (try? store.weeklyReport(of: user, week: nil))?.payload
        }
        pending.outbox += items
        return !items.isEmpty
    }
}
