import RuleEngine
import RuleLanguage
import Synchronization

/// The rules the daemon runs: loads and checks them at start, and on SIGHUP checks the new rules
/// first and hands them to the shards, or refuses an invalid set and keeps the old rules. Around
/// a reload it tells systemd `RELOADING=1` then `READY=1` (once the daemon has said ready), and
/// it counts reloads by result for `mobilityd_rule_reloads_total`.
final class RuleReloader: Sendable {
    private let rules: String
    private let log: Logger
    private let notifier: ServiceNotifier
    private let counts = Mutex<(successes: Int, failures: Int)>((0, 0))
    private let current = Mutex<String>("")

    /// Loads the rules at `rules` (a file or folder), logging to `log`, notifying `notifier`.
    init(rules: String, log: Logger, notifier: ServiceNotifier) {
        self.rules = rules
        self.log = log
        self.notifier = notifier
    }

    /// The identity of the rules running now ("" before start).
    var identity: String { current.withLock { $0 } }
    /// Reloads that replaced the rules.
    var successes: Int { counts.withLock { $0.successes } }
    /// Reloads refused because the new rules were invalid.
    var failures: Int { counts.withLock { $0.failures } }

    /// Loads and checks the rules; logs every diagnostic on failure.
    func load() -> Program? {
        let (sources, errors) = RuleSet.load([rules])
        for e in errors { log.error("cannot load rules", ["error": e]) }
        let (program, diagnostics) = Checker.check(sources)
        let renderer = DiagnosticRenderer(files: sources)
        for d in diagnostics {
            log.log(d.severity == .error ? .error : .warn, "rule diagnostic",
                    ["at": renderer.position(d.range), "id": d.id.rawValue, "message": d.message])
        }
        guard errors.isEmpty, let program else { return nil }
        return program
    }

    /// Records `program` as the rules the daemon starts with.
    func started(with program: Program) { current.withLock { $0 = program.identity } }

    /// SIGHUP: check the new rules first; an invalid set is refused and the old rules keep
    /// running. `notify`: the daemon has said ready, so the reload is announced to systemd.
    func reload(_ shards: [Shard], notify: Bool) {
        if notify { notifier.reloading(status: "reloading the rules") }
        guard let program = load() else {
            log.error("reload refused: the new rules are invalid; keeping the old rules")
            counts.withLock { $0.failures += 1 }
            if notify { notifier.ready(status: "running: reload refused (invalid rules), the old rules keep running") }
            return
        }
        defer { if notify { notifier.ready(status: "running: rules reloaded (\(program.identity))") } }
        for s in shards { s.queue.push(.reload(program)) }
        current.withLock { $0 = program.identity }
        counts.withLock { $0.successes += 1 }
        log.info("rules reloaded", ["alerts": String(program.alerts.count), "series": String(program.series.count), "rules_identity": program.identity])
    }
}
