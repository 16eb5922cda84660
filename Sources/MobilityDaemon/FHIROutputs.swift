import MobilityFHIR
import MobilityModel
import RuleEngine
import RuleLanguage
import StateStore

/// A shard's FHIR R4 copies of its outputs (`--fhir on`), for a clinical system's integration:
/// each alert transition as a `Flag` on `{root}/fhir/users/{u}/Flag/{id}` (retained while active,
/// the inactive Flag then an empty retained message after resolving, as the alert topics), and
/// each series value as an `Observation` on `{root}/fhir/users/{u}/Observation/{id}` (not
/// retained; only while series are published). Resource ids are stable, so a re-publish updates
/// the same resource. They go through the shard's outbox with its other outputs.
///
/// Owned by one shard's thread; the series' codings are re-read from the rules on reload.
struct FHIROutputs {
    let root: String
    /// Whether series values are published (as Observations).
    let observations: Bool
    private var meanings: [String: SeriesMeaning]

    /// Creates the FHIR outputs of a shard running `program`.
    init(program: Program, root: String, observations: Bool) {
        self.root = root
        self.observations = observations
        self.meanings = SeriesMeaning.of(program)
    }

    /// Takes the series' codings of reloaded rules.
    mutating func reload(_ program: Program) { meanings = SeriesMeaning.of(program) }

    /// The FHIR outbox items of an output (none for rejections, or a missing day revising nothing).
    func items(_ o: EngineOutput) -> [StateStore.OutboxItem] {
        switch o {
        case .alert(let a):
            let topic = "\(root)/fhir/users/\(a.user)/Flag/\(FlagResource.id(of: a))"
            let payload = FlagResource.jsonBytes(a)
            if a.status == .firing { return [.init(topic: topic, payload: payload, retain: true)] }
            return [.init(topic: topic, payload: payload, retain: false), .init(topic: topic, payload: [], retain: true)]
        case .series(let s):
            guard observations, let json = ObservationResource.jsonBytes(s, meaning: meanings[s.name]) else { return [] }
            let id = ObservationResource.id(user: s.user, series: s.name, day: s.day)
            return [.init(topic: "\(root)/fhir/users/\(s.user)/Observation/\(id)", payload: json, retain: false)]
        case .rejected: return []
        }
    }

    /// The FHIR copy of a care-staff timeline change: the entry's Observation on
    /// `{root}/fhir/users/{u}/Observation/{id}` (not retained), `entered-in-error` once retracted.
    func timelineItems(user: String, entry: TimelineEvent, retracted: Bool) -> [StateStore.OutboxItem] {
        let id = TimelineObservation.id(user: user, entry: entry.id)
        return [
            .init(
                topic: "\(root)/fhir/users/\(user)/Observation/\(id)", payload: TimelineObservation.jsonBytes(entry, user: user, retracted: retracted),
                retain: false)
        ]
    }
}
