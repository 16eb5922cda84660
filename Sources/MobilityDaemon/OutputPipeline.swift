import MobilityModel
import MobilityWire
import RuleEngine
import StateStore

/// A shard's output stages, in order (Alertmanager's notification pipeline): what a batch's
/// engine outputs become before they are committed. The acknowledgement screen drops reminders
/// of acknowledged instances; then each output in turn is bundled (series), marked by silences,
/// written to its user's topic and fanned out to the care teams (notifications a silence
/// withholds dropped), copied as FHIR (a silence withholds none: they are the clinical record),
/// recorded in the history, and a week it closes marked due.
///
/// Owned by one shard's thread. It appends to the shard's pending outbox and history; their order
/// is the order of the outputs, which is the order they are committed and published in.
struct OutputPipeline {
    let layout: TopicLayout
    var screen: AcknowledgementScreen
    /// A user-day's series points, gathered into one message (nil: series are only recorded).
    var bundler: SeriesBundler?
    var silences: SilenceStage
    /// The copies of alerts and reports under the users' care teams.
    var teams: TeamOutputs
    /// The FHIR copies of alerts and series (nil: `--fhir off`).
    var fhir: FHIROutputs?
    var history: HistoryStage
    var markers: ReportMarkers

    /// What the stages add to the pending commit.
    struct Staged {
        var outbox: [StateStore.OutboxItem] = []
        var history: [HistoryRecord] = []
        /// Series messages among `outbox` (counted as published once committed).
        var seriesMessages = 0
    }

    /// Runs a batch's outputs through the stages into `staged`, in output order. Drops from
    /// `out` the reminders of acknowledged alert instances.
    mutating func run(_ out: inout [EngineOutput], wall: Timestamp, into staged: inout Staged) {
        staged.history += screen.screen(&out)
        for o in out { stage(o, wall: wall, into: &staged) }
        if let done = bundler?.finish() {
            staged.outbox.append(done)
            staged.seriesMessages += 1
        }
    }

    /// One output through the stages.
    private mutating func stage(_ output: EngineOutput, wall: Timestamp, into staged: inout Staged) {
        var o = output
        var verdict: SilenceDesk.Verdict?
        switch output {
        case .series(let s):
            if let done = bundler?.add(s) {
                staged.outbox.append(done)
                staged.seriesMessages += 1
            }
        case .alert(var a):
            verdict = silences.mark(&a, now: wall)
            o = .alert(a)
        case .rejected: break
        }
        if !o.isSeries {
            var items = Self.userItems(o, layout: layout)
            if case .alert(let a) = o {
                items += teams.alertItems(a, userItems: items)
                silences.withhold(verdict, a, items: &items)
            }
            staged.outbox += items
        }
        if let fhir { staged.outbox += fhir.items(o) }
        if let h = history.row(o) { staged.history.append(h) }
        if case .series(let s) = o, let m = markers.marker(s) { staged.history.append(m) }
    }

    /// The user-topic items of an alert or rejection: alerts retained while firing, cleared after
    /// resolving; none for a series point (a user-day's series leave together: ``SeriesBundler``).
    static func userItems(_ o: EngineOutput, layout: TopicLayout) -> [StateStore.OutboxItem] {
        switch o {
        case .alert(let a):
            let topic = layout.alert(a.user, rule: a.rule)
            if a.status == .firing { return [.init(topic: topic, payload: a.jsonBytes, retain: true)] }
            return [.init(topic: topic, payload: a.jsonBytes, retain: false), .init(topic: topic, payload: [], retain: true)]
        case .series: return []
        case .rejected(let user, let topic, let r):
            return [
                .init(topic: user.map { layout.rejected($0) } ?? layout.rejectedUnknown, payload: r.jsonBytes(user: user, topic: topic), retain: false)
            ]
        }
    }
}
