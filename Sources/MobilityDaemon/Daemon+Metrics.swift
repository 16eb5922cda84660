import Foundation
import HTTPEndpoint
import MobilityModel
import StateStore

extension Daemon {
    /// The metrics listener's answer: `/healthz`, `/metrics`, else 404.
    func http(path: String, _ c: Components) -> HTTPResponse {
        switch path {
        case "/healthz":
            let problems = healthProblems(c).problems
            if problems.isEmpty {
                let warnings = healthWarnings()
                return HTTPResponse(body: warnings.isEmpty ? "ok\n" : "degraded: " + warnings.joined(separator: "; ") + "\n")
            }
            return HTTPResponse(status: 503, body: problems.joined(separator: "; ") + "\n")
        case "/metrics":
            return HTTPResponse(
                contentType: "text/plain; version=0.0.4; charset=utf-8",
                bytes: metrics(c))
        default:
            return HTTPResponse(status: 404, body: "not found; try /metrics or /healthz\n")
        }
    }

    /// The Prometheus text of `/metrics` (no health data: counts, states and the rules' identity).
    func metrics(_ c: Components) -> [UInt8] {
        var total = ShardStats()
        for s in c.shards { total += s.stats.withLock { $0 } }
        var m = MetricsText()
        ingestMetrics(c, total, into: &m)
        outputMetrics(c, total, into: &m)
        connectionMetrics(c, into: &m)
        if let intake = c.partitionInput as? PartitionStreamService { streamIntakeMetrics(intake, into: &m) }
        return m.bytes
    }

    /// The JetStream intake's partitions and consumers (`--intake jetstream`); counts of this run.
    private func streamIntakeMetrics(_ intake: PartitionStreamService, into m: inout MetricsText) {
        let (counts, since) = intake.intake(now: clock.uptimeNanoseconds())
        m.family("mobilityd_partition_stream_sequence", "gauge", "The stream sequence each owned partition is committed through.")
        for (k, seq) in counts.committed.sorted(by: { $0.key < $1.key }) {
            m.sample("mobilityd_partition_stream_sequence", ["partition": String(k)], Double(seq))
        }
        m.family(
            "mobilityd_partition_progress_age_seconds", "gauge",
            "Seconds since each owned partition's consumer last made progress (made, fetched, acknowledged, or answered idle).")
        for (k, s) in since.sorted(by: { $0.key < $1.key }) { m.sample("mobilityd_partition_progress_age_seconds", ["partition": String(k)], s) }
        m.family(
            "mobilityd_jetstream_messages_total", "counter",
            "Messages of the partitions committed and acknowledged (a batch whose acknowledgement failed is not counted; a later one covers it).")
        m.sample("mobilityd_jetstream_messages_total", Double(counts.messages))
        m.family("mobilityd_jetstream_batches_total", "counter", "Batches committed and acknowledged.")
        m.sample("mobilityd_jetstream_batches_total", Double(counts.batches))
        m.family("mobilityd_jetstream_consumers_made_total", "counter", "Partition consumers made.")
        m.sample("mobilityd_jetstream_consumers_made_total", Double(counts.consumersMade))
        m.family("mobilityd_jetstream_consumers_remade_total", "counter", "Partition consumers made anew, by reason.")
        for r in StreamIntakeCounts.Remade.allCases {
            m.sample("mobilityd_jetstream_consumers_remade_total", ["reason": r.rawValue], Double(counts.remade[r] ?? 0))
        }
    }

    /// What the shards took and evaluated, their queues and batches, the alerts and the staff desks.
    private func ingestMetrics(_ c: Components, _ total: ShardStats, into m: inout MetricsText) {
        let shards = c.shards
        let depths = shards.map { $0.queue.count }
        let staged = c.stage.depth
        m.family("mobilityd_messages_received_total", "counter", "MQTT messages received on the input topics.")
        m.sample("mobilityd_messages_received_total", Double(total.ingest.messages))
        m.family("mobilityd_samples_accepted_total", "counter", "Samples accepted into the engine.")
        m.sample("mobilityd_samples_accepted_total", Double(total.ingest.samplesAccepted))
        m.family("mobilityd_samples_duplicate_total", "counter", "Samples ignored as re-deliveries of a known id.")
        m.sample("mobilityd_samples_duplicate_total", Double(total.ingest.duplicates))
        m.family("mobilityd_samples_superseded_total", "counter", "Samples that replaced an older sync version.")
        m.sample("mobilityd_samples_superseded_total", Double(total.ingest.superseded))
        m.family("mobilityd_rejected_total", "counter", "Inputs rejected, by reason.")
        for r in RejectionReason.allCases { m.sample("mobilityd_rejected_total", ["reason": r.rawValue], Double(total.ingest.rejected[r] ?? 0)) }
        m.family("mobilityd_deletions_total", "counter", "Samples retracted by deletions.")
        m.sample("mobilityd_deletions_total", Double(total.ingest.deletions))
        m.family("mobilityd_samples_deleted_before_arrival_total", "counter", "Samples dropped because a deletion of their id came first.")
        m.sample("mobilityd_samples_deleted_before_arrival_total", Double(total.ingest.deletedBeforeArrival))
        m.family("mobilityd_timeline_events_total", "counter", "Clinical events and annotations recorded.")
        m.sample("mobilityd_timeline_events_total", Double(total.ingest.events))
        m.family("mobilityd_users", "gauge", "Users with state.")
        m.sample("mobilityd_users", Double(total.users))
        m.family("mobilityd_queue_depth", "gauge", "Messages waiting per shard, and in the decode stage (queued or being decoded).")
        for (i, d) in depths.enumerated() { m.sample("mobilityd_queue_depth", ["shard": String(i)], Double(d)) }
        m.sample("mobilityd_queue_depth", ["stage": "decode"], Double(staged))
        m.family(
            "mobilityd_shard_busy_seconds", "gauge", "How long each shard's batch at hand has run (0 while idle); past --stall-timeout the shard is stalled.")
        let now = clock.uptimeNanoseconds()
        for s in shards { m.sample("mobilityd_shard_busy_seconds", ["shard": String(s.index)], Double(s.busyNanoseconds(now: now)) / 1e9) }
        m.family(
            "mobilityd_shard_batch_seconds_max", "gauge",
            "The longest shard batch since the start (taken to committed and handed to the broker), by shard.")
        for s in shards { m.sample("mobilityd_shard_batch_seconds_max", ["shard": String(s.index)], s.stats.withLock { $0.longestBatchSeconds }) }
        m.family("mobilityd_evaluation_seconds", "summary", "Time spent ingesting and evaluating rules, per batch.")
        m.sample("mobilityd_evaluation_seconds_sum", total.evaluationSeconds)
        m.sample("mobilityd_evaluation_seconds_count", Double(total.batches))
        m.family("mobilityd_alert_transitions_total", "counter", "Alert transitions published, by rule and status.")
        for (rule, byStatus) in total.alerts.sorted(by: { $0.key < $1.key }) {
            for (st, n) in byStatus.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                m.sample("mobilityd_alert_transitions_total", ["rule": rule, "status": st.rawValue], Double(n))
            }
        }
        m.family("mobilityd_alert_reminders_total", "counter", "Repeat reminders of firing alerts, by rule.")
        for (rule, n) in total.repeats.sorted(by: { $0.key < $1.key }) { m.sample("mobilityd_alert_reminders_total", ["rule": rule], Double(n)) }
        c.desk.metrics(into: &m)
        c.silences.metrics(into: &m, now: clock.wall())
        c.timelines.metrics(into: &m)
        if let sessions = c.consoleSessions { Daemon.consoleMetrics(sessions.counts, into: &m) }
    }

    /// The console's sign-ins, lockouts and sessions: counts only, never a login.
    static func consoleMetrics(_ c: ConsoleSessions.Counts, into m: inout MetricsText) {
        m.family(
            "mobilityd_console_sign_ins_total", "counter",
            "Console sign-ins, by result (signed_in; refused: wrong login or password; locked: refused unchecked, the login being locked).")
        for (result, n) in [("signed_in", c.signedIn), ("refused", c.refused), ("locked", c.locked)] {
            m.sample("mobilityd_console_sign_ins_total", ["result": result], Double(n))
        }
        m.family("mobilityd_console_lockouts_total", "counter", "Console logins locked after repeated failed sign-ins.")
        m.sample("mobilityd_console_lockouts_total", Double(c.lockouts))
        m.family("mobilityd_console_sessions", "gauge", "Console sessions open.")
        m.sample("mobilityd_console_sessions", Double(c.sessions))
    }

    /// What the shards published and committed, and the state's health.
    private func outputMetrics(_ c: Components, _ total: ShardStats, into m: inout MetricsText) {
        m.family("mobilityd_alerts_firing", "gauge", "Alerts firing now, by rule.")
        for (rule, n) in total.firing.sorted(by: { $0.key < $1.key }) { m.sample("mobilityd_alerts_firing", ["rule": rule], Double(n)) }
        m.family("mobilityd_series_published_total", "counter", "Series messages published (one per user-day, every series of the day).")
        m.sample("mobilityd_series_published_total", Double(total.seriesPublished))
        m.family(
            "mobilityd_outputs_uncommitted", "gauge", "Outputs made but not yet committed (series wait for the commit interval); published once committed.")
        m.sample("mobilityd_outputs_uncommitted", Double(total.outputsUncommitted))
        m.family("mobilityd_weekly_reports_total", "counter", "Weekly care-team reports built, kept and published.")
        m.sample("mobilityd_weekly_reports_total", Double(total.weeklyReports))
        m.family("mobilityd_weekly_reports_due", "gauge", "Weekly reports whose week closed, not built yet (waiting for a commit or the report worker).")
        m.sample("mobilityd_weekly_reports_due", Double(total.weeklyReportsDue))
        m.family("mobilityd_publish_errors_total", "counter", "Publishes that libmosquitto refused.")
        m.sample("mobilityd_publish_errors_total", Double(total.publishErrors))
        m.family(
            "mobilityd_publish_refused_total", "counter",
            "Outputs refused for good, by kind and reason: by the broker (MQTT 5 reason code) or by libmosquitto (a message it can never send).")
        let (refusedCounts, deadLetters) = refusals.withLock { ($0.counts, $0.deadLetters) }
        for (k, n) in refusedCounts.sorted(by: { $0.key < $1.key }) {
            m.sample("mobilityd_publish_refused_total", ["kind": k.kind, "reason": k.reason], Double(n))
        }
        m.family("mobilityd_dead_letters", "gauge", "Refused outputs parked in the state store (dead_letters), not retried.")
        m.sample("mobilityd_dead_letters", Double(deadLetters))
        m.family("mobilityd_state_commits_total", "counter", "State store commits (users, journal positions and outputs together).")
        m.sample("mobilityd_state_commits_total", Double(total.commits))
        m.family("mobilityd_state_commit_failures_total", "counter", "State store commits that failed (outputs held until one succeeds).")
        m.sample("mobilityd_state_commit_failures_total", Double(total.commitFailures))
        m.family("mobilityd_journal_skipped_total", "counter", "Journal records skipped on replay because they were already committed.")
        m.sample("mobilityd_journal_skipped_total", Double(total.replayed))
        m.family("mobilityd_journal_writable", "gauge", "0 while the ingest journal refuses writes (messages are not acknowledged).")
        m.sample("mobilityd_journal_writable", c.router.journalWritable.load(ordering: .relaxed) ? 1 : 0)
        let findings = stateFindings.withLock { $0 }
        m.family(
            "mobilityd_state_damage", "gauge",
            "What the start found damaged or missing and went on without (--recover-journal, --rebuild-store, or accepted at an earlier start), by side.")
        for side in [DurableStateCheck.Finding.Side.journal, .store] {
            m.sample("mobilityd_state_damage", ["side": side.rawValue], Double(findings.filter { $0.side == side }.count))
        }
        m.family(
            "mobilityd_state_records_lost", "gauge", "Acknowledged records the start's damage cost (at most this many where the count cannot be exact).")
        m.sample("mobilityd_state_records_lost", Double(findings.reduce(UInt64(0)) { $0 + ($1.lost ?? 0) }))
    }

    /// The broker connections, the rules and the process.
    private func connectionMetrics(_ c: Components, into m: inout MetricsText) {
        let subscriber = c.subscriber, publisher = c.publisher
        m.family("mobilityd_outputs_unacknowledged", "gauge", "Outputs published but not yet acknowledged by the broker, or waiting for a retry.")
        m.sample("mobilityd_outputs_unacknowledged", Double(c.sink.acks.inFlight + c.sink.backlog))
        let dropped = brokerDropped.load(ordering: .relaxed)
        if dropped >= 0 {
            m.family(
                "mobilityd_broker_messages_dropped", "gauge",
                "Messages the broker reports it dropped for its queue limits ($SYS/broker/publish/messages/dropped; mosquitto only).")
            m.sample("mobilityd_broker_messages_dropped", Double(dropped))
        }
        m.family("mobilityd_broker_connected", "gauge", "1 when the connection is up, by role.")
        m.sample("mobilityd_broker_connected", ["role": "subscriber"], subscriber.isConnected ? 1 : 0)
        m.sample("mobilityd_broker_connected", ["role": "publisher"], publisher.isConnected ? 1 : 0)
        m.family("mobilityd_broker_subscribed", "gauge", "1 once the broker answered the input subscriptions of the current connection.")
        m.sample("mobilityd_broker_subscribed", subscriber.isSubscribed ? 1 : 0)
        m.family("mobilityd_broker_reconnects_total", "counter", "Reconnections after the first connection, by role.")
        m.sample("mobilityd_broker_reconnects_total", ["role": "subscriber"], Double(max(0, subscriber.connectionCount - 1)))
        m.sample("mobilityd_broker_reconnects_total", ["role": "publisher"], Double(max(0, publisher.connectionCount - 1)))
        m.family(
            "mobilityd_broker_sessions_lost_total", "counter",
            "Reconnections of the subscriber or a partition session that the broker answered without the session it was keeping (its queued inputs are lost).")
        m.sample("mobilityd_broker_sessions_lost_total", Double(sessionsLost.load(ordering: .relaxed)))
        let watches = evictionWatches.withLock { $0 }
        m.family(
            "mobilityd_broker_evictions_total", "counter",
            "Connections the broker closed within 10 s of accepting them (another connection with the same client id), by role.")
        for role in ["subscriber", "publisher"] { m.sample("mobilityd_broker_evictions_total", ["role": role], Double(watches[role]?.evictions ?? 0)) }
        m.family("mobilityd_broker_eviction_loop", "gauge", "1 while a connection is evicted right after each connect (/healthz fails), by role.")
        for role in ["subscriber", "publisher"] { m.sample("mobilityd_broker_eviction_loop", ["role": role], watches[role]?.isLooping == true ? 1 : 0) }
        m.family("mobilityd_rule_reloads_total", "counter", "SIGHUP rule reloads, by result.")
        m.sample("mobilityd_rule_reloads_total", ["result": "success"], Double(reloader.successes))
        m.sample("mobilityd_rule_reloads_total", ["result": "failure"], Double(reloader.failures))
        m.family("mobilityd_rules_info", "gauge", "The loaded rule set.")
        m.sample("mobilityd_rules_info", ["identity": reloader.identity], 1)
        m.family("mobilityd_start_time_seconds", "gauge", "Start time of the process since the epoch.")
        m.sample("mobilityd_start_time_seconds", started.timeIntervalSince1970.rounded())
    }
}
