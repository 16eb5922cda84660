import Ingest
import MobilityModel
import RuleEngine

/// Counters a shard keeps for `/metrics`, updated once per batch.
struct ShardStats: Sendable {
    var ingest = IngestCounters()
    var users = 0
    var batches = 0
    var evaluationSeconds = 0.0
    /// The longest batch so far (taken to committed and handed to the broker), seconds.
    var longestBatchSeconds = 0.0
    var alerts: [String: [AlertStatus: Int]] = [:]
    var repeats: [String: Int] = [:]
    var firing: [String: Int] = [:]
    var seriesPublished = 0
    /// Outputs made but waiting for a commit (series wait for the interval's commit).
    var outputsUncommitted = 0
    /// Weekly reports built and published.
    var weeklyReports = 0
    /// Weeks due, not built yet: waiting in the shard for a commit, or held by its report worker.
    var reportsDueInShard = 0
    /// Weeks held by the shard's report worker (set by the worker).
    var reportsDueInWorker = 0
    /// Weeks due, not built yet (``reportsDueInShard`` and ``reportsDueInWorker``).
    var weeklyReportsDue: Int { reportsDueInShard + reportsDueInWorker }
    var publishErrors = 0
    var commits = 0
    var commitFailures = 0
    var replayed = 0
    var storeHealthy = true

    /// Adds another shard's counters to these (the daemon's totals are the sum over its shards);
    /// the store is healthy only while every shard's is.
    static func += (total: inout ShardStats, s: ShardStats) {
        total.ingest += s.ingest
        total.users += s.users
        total.batches += s.batches
        total.evaluationSeconds += s.evaluationSeconds
        total.longestBatchSeconds = max(total.longestBatchSeconds, s.longestBatchSeconds)
        for (rule, m) in s.alerts { for (k, n) in m { total.alerts[rule, default: [:]][k, default: 0] += n } }
        for (rule, n) in s.repeats { total.repeats[rule, default: 0] += n }
        for (rule, n) in s.firing { total.firing[rule, default: 0] += n }
        total.seriesPublished += s.seriesPublished
        total.outputsUncommitted += s.outputsUncommitted
        total.weeklyReports += s.weeklyReports
        total.reportsDueInShard += s.reportsDueInShard
        total.reportsDueInWorker += s.reportsDueInWorker
        total.publishErrors += s.publishErrors
        total.commits += s.commits
        total.commitFailures += s.commitFailures
        total.replayed += s.replayed
        total.storeHealthy = total.storeHealthy && s.storeHealthy
    }

    /// The sum of several shards' counters.
    static func merged<S: Sequence>(_ all: S) -> ShardStats where S.Element == ShardStats {
        var total = ShardStats()
        for s in all { total += s }
        return total
    }
}

extension IngestCounters {
    /// Adds another ingestor's counters to these.
    static func += (total: inout IngestCounters, c: IngestCounters) {
        total.messages += c.messages
        total.samplesAccepted += c.samplesAccepted
        total.duplicates += c.duplicates
        total.superseded += c.superseded
        total.stale += c.stale
        total.deletedBeforeArrival += c.deletedBeforeArrival
        total.deletions += c.deletions
        total.events += c.events
        for (r, n) in c.rejected { total.rejected[r, default: 0] += n }
    }
}
