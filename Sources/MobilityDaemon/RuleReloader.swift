import MobilityModel
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
    /// The sources of the rules running now, as the state store keeps them (see ``stored``).
    private let currentSources = Mutex<String>("")
    /// The `report` block of the rules last loaded (the pages' spec).
    private let currentReport = Mutex<ReportDeclaration?>(nil)
    /// The label names the running rules' alerts produce (silence matchers may name them).
    private let currentLabels = Mutex<Set<String>>([])
    /// The label names the running rules' alerts produce.
    var labelNames: Set<String> { currentLabels.withLock { $0 } }
    /// The clinical-event and annotation kinds the running rules name (the console's forms offer them).
    private let currentKinds = Mutex<(clinical: [String], annotation: [String])>(([], []))
    /// The clinical-event and annotation kinds the running rules name, sorted.
    var timelineKinds: (clinical: [String], annotation: [String]) { currentKinds.withLock { $0 } }

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
            log.log(
                d.severity == .error ? .error : .warn, "rule diagnostic",
                ["at": renderer.position(d.range), "id": d.id.rawValue, "message": d.message])
        }
        guard errors.isEmpty, let program else { return nil }
        currentSources.withLock { $0 = RuleReloader.stored(sources) }
        currentReport.withLock { $0 = program.report }
        return program
    }

    /// The sources of the rules last loaded, as one JSON object (path → text) for the state
    /// store, so that a restart with other rules can restore into the rules the state was made
    /// with and reload from there (resolving the alerts of removed rules).
    var storedSources: String { currentSources.withLock { $0 } }

    /// The report block of the rules last loaded, nil when they declare none.
    var report: ReportDeclaration? { currentReport.withLock { $0 } }

    static func stored(_ sources: [SourceFile]) -> String {
        JSONValue.object(sources.map { ($0.path, .string(String(decoding: $0.bytes, as: UTF8.self))) }).text
    }

    /// The program of rules kept by ``storedSources``, or nil when they no longer check (a
    /// language change) or cannot be read.
    static func program(fromStored text: String) -> Program? {
        guard case .success(.object(let files)) = JSONValue.parse(text) else { return nil }
        var sources: [SourceFile] = []
        for (path, value) in files {
            guard case .string(let t) = value else { return nil }
            sources.append(SourceFile(path: path, text: t))
        }
        let (program, diagnostics) = Checker.check(sources)
        guard !diagnostics.contains(where: { $0.severity == .error }) else { return nil }
        return program
    }

    /// Records `program` as the rules the daemon starts with.
    func started(with program: Program) {
        current.withLock { $0 = program.identity }
        currentLabels.withLock { $0 = RuleReloader.labelNames(program) }
        currentKinds.withLock { $0 = (program.clinicalKinds.sorted(), program.annotationKinds.sorted()) }
    }

    /// Every label name of the program's alerts.
    static func labelNames(_ p: Program) -> Set<String> { Set(p.alerts.flatMap { $0.labels.map(\.0) }) }

    /// SIGHUP: check the new rules first; an invalid set is refused and the old rules keep
    /// running. `notify`: the daemon has said ready, so the reload is announced to systemd;
    /// `deliver`: hands the new rules to every shard (after the messages routed before).
    /// Returns the new rules' identity, or nil when the reload was refused.
    @discardableResult
    func reload(notify: Bool, deliver: (Program) -> Void) -> String? {
        if notify { notifier.reloading(status: "reloading the rules") }
        guard let program = load() else {
            log.error("reload refused: the new rules are invalid; keeping the old rules")
            counts.withLock { $0.failures += 1 }
            if notify { notifier.ready(status: "running: reload refused (invalid rules), the old rules keep running") }
            return nil
        }
        defer { if notify { notifier.ready(status: "running: rules reloaded (\(program.identity))") } }
        deliver(program)
        current.withLock { $0 = program.identity }
        currentLabels.withLock { $0 = RuleReloader.labelNames(program) }
        currentKinds.withLock { $0 = (program.clinicalKinds.sorted(), program.annotationKinds.sorted()) }
        counts.withLock { $0.successes += 1 }
        log.info("rules reloaded", ["alerts": String(program.alerts.count), "series": String(program.series.count), "rules_identity": program.identity])
        return program.identity
    }
}
