import MobilityModel
import RuleEngine
import StateStore

// The shard's output stages: what a batch's engine outputs become before they are committed —
// the acknowledgement screen, series bundles, silences, the user's and the care teams' topics,
// the FHIR copies, the history and the weekly report markers.
extension Shard {
    /// Runs a batch's outputs through the stages, in output order, into the pending outbox and
    /// history. Drops from `out` the reminders of acknowledged alert instances.
    func stageOutputs(_ out: inout [EngineOutput], wall: Timestamp) {
        ingestor.engine.takeTouched(into: &batchUsers)
        // No reminders of acknowledged instances; the history still records what they said.
        let withheld = desk?.screen(&out) ?? []
        if recordsHistory { for a in withheld { pendingHistory.append(.alert(a)) } }
        pendingUsers.formUnion(batchUsers)
        for o in out { stage(o, wall: wall) }
        if let done = bundler.finish() {
            pendingOutbox.append(done)
            heldSeries += 1
        }
    }

    /// One output through the stages.
    private func stage(_ output: EngineOutput, wall: Timestamp) {
        var o = output
        if case .series(let s) = o, publishesSeries, let done = bundler.add(s) {
            pendingOutbox.append(done)
            heldSeries += 1
        }
        // A silenced transition is recorded and marked; its notifications are withheld.
        var verdict: SilenceDesk.Verdict?
        if case .alert(var a) = o, let v = silences?.verdict(for: a, now: wall) {
            a.silencedBy = v.all
            o = .alert(a)
            verdict = v
        }
        if !o.isSeries {
            var items = Shard.outboxItems(o, layout: layout)
            if case .alert(let a) = o { items += teamOutputs.alertItems(a, userItems: items) }
            if let verdict, case .alert(let a) = o { silences?.withhold(verdict, a, items: &items) }
            pendingOutbox += items
            // The FHIR copies are the record for a clinical system: a silence withholds none.
            if let fhir { pendingOutbox += fhir.items(o) }
        } else if publishesSeries, let fhir {
            pendingOutbox += fhir.items(o)
        }
        if recordsHistory, let h = Shard.historyRecord(o) { pendingHistory.append(h) }
        if reports != nil, case .series(let s) = o, let week = WeeklyReports.closes(s) {
            let due = WeeklyReports.Due(user: s.user, week: week)
            if dueWeeks.insert(due).inserted { pendingHistory.append(WeeklyReports.marker(due)) }
        }
    }
}
