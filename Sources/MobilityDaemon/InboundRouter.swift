import Foundation
import MobilityWire
import StateStore
import Synchronization

/// Where the subscriber's messages go, on libmosquitto's network thread: `$SYS` reports to the
/// daemon, staff commands (acknowledgements, silences, timeline commands) to their desks, and
/// inputs to the ingest journal and then their user's shard (through the decode stage).
///
/// An input is journalled before the callback returns (libmosquitto acknowledges it after that),
/// so a journal that refuses writes holds the message here, unacknowledged, until the disk takes
/// it again or the run ends (see ``journalled(topic:payload:)``); then the caller drops the
/// connection, so that the message is not acknowledged and the broker's session keeps it.
final class InboundRouter: Sendable {
    private let layout: TopicLayout
    private let desk: AcknowledgementDesk
    private let silences: SilenceDesk
    private let timelines: TimelineDesk
    private let stage: DecodeStage
    private let journal: IngestJournal
    private let routing: ShardRouting
    private let termination: Termination
    /// The wall clock of command times.
    private let clock: DaemonClock
    private let log: Logger
    private let systemReport: @Sendable (String, [UInt8]) -> Void
    /// False while the ingest journal refuses writes (`/healthz` fails, `mobilityd_journal_writable` is 0).
    let journalWritable = Atomic<Bool>(true)

    /// The first wait after a refused journal write, and the longest: the waits double in
    /// between, so a disk that comes back soon is used at once and a full one is retried once a
    /// second. A requested termination ends a wait at once.
    static let firstRetrySeconds = 0.05
    static let longestRetrySeconds = 1.0

    /// - Parameter systemReport: takes the broker's `$SYS` messages.
    init(
        layout: TopicLayout, desk: AcknowledgementDesk, silences: SilenceDesk, timelines: TimelineDesk, stage: DecodeStage, journal: IngestJournal,
        routing: ShardRouting, termination: Termination, clock: DaemonClock, log: Logger, systemReport: @escaping @Sendable (String, [UInt8]) -> Void
    ) {
        self.layout = layout
        self.desk = desk
        self.silences = silences
        self.timelines = timelines
        self.stage = stage
        self.journal = journal
        self.routing = routing
        self.termination = termination
        self.clock = clock
        self.log = log
        self.systemReport = systemReport
    }

    /// A message of the subscriber. False: an input the journal refused until the run ended; the
    /// caller must drop the connection before returning, or libmosquitto acknowledges it.
    func message(topic: String, payload: [UInt8]) -> Bool {
        if topic.utf8.first == UInt8(ascii: "$") {
            systemReport(topic, payload)
            return true
        }
        if silences.commandTeam(topic) != nil {
            silences.received(topic: topic, payload: payload, now: clock.wall())
            return true
        }
        if timelines.commandTeam(topic) != nil {  // committed (or refused) by its user's shard before it is acknowledged, not journalled
            timelines.received(topic: topic, payload: payload) { r in
                stage.deliver(.timeline(r), to: routing.shard(of: r.command.user))
                _ = r.answer.wait(seconds: TimelineDesk.answerSeconds)
            }
            return true
        }
        if desk.commandTeam(topic) != nil {  // a command: taken by its user's shard before it is acknowledged, not journalled
            desk.received(topic: topic, payload: payload) { c in
                let taken = StaffReceipt()
                stage.deliver(.acknowledge(c, taken: taken), to: routing.shard(of: c.user))
                _ = taken.wait(seconds: 10)
            }
            return true
        }
        guard let seq = journalled(topic: topic, payload: payload) else { return false }
        let parsed = layout.parse(topic)
        stage.route(seq: seq, topic: topic, parsed: parsed, payload: payload, to: routing.shard(of: parsed))  // and marks it queued
        return true
    }

    /// Journals an input and returns its sequence number; retries a refused write (waiting
    /// ``firstRetrySeconds``, doubling up to ``longestRetrySeconds``) until the journal takes it,
    /// or returns nil once the run is ending (the message is then neither journalled nor
    /// acknowledged: the broker's session delivers it again to the next run).
    private func journalled(topic: String, payload: [UInt8]) -> UInt64? {
        var wait = InboundRouter.firstRetrySeconds
        while true {
            do {
                let seq = try journal.append(topic: topic, payload: payload)
                if !journalWritable.exchange(true, ordering: .relaxed) { log.info("journal writable again") }
                return seq
            } catch {
                if journalWritable.exchange(false, ordering: .relaxed) {
                    log.error("cannot journal an incoming message; not acknowledging until the disk accepts it", ["error": "\(error)"])
                }
                if termination.wait(seconds: wait) { return nil }
                wait = min(wait * 2, InboundRouter.longestRetrySeconds)
            }
        }
    }

    /// A message over the size limit (neither copied nor journalled): refused by its desk or its user's shard.
    func oversized(topic: String, size: Int) {
        if desk.commandTeam(topic) != nil { desk.oversized(topic: topic, size: size); return }
        if silences.commandTeam(topic) != nil { silences.oversized(topic: topic, size: size); return }
        if timelines.commandTeam(topic) != nil { timelines.oversized(topic: topic, size: size); return }
        let parsed = layout.parse(topic)
        stage.deliver(.oversized(topic: topic, parsed: parsed, size: size), to: routing.shard(of: parsed))
    }

    /// A retained message: true when it is refused (and so not taken as a message).
    ///
    /// Only a profile may be retained: the broker delivers a retained message again on every
    /// reconnect, and a retained deletion or retraction would undo later data; a retained staff
    /// command would be applied again (an empty one only clears it).
    func retained(topic: String, size: Int) -> Bool {
        if desk.commandTeam(topic) != nil { if size > 0 { desk.retained(topic: topic) }; return true }
        if silences.commandTeam(topic) != nil { if size > 0 { silences.retained(topic: topic) }; return true }
        if timelines.commandTeam(topic) != nil { if size > 0 { timelines.retained(topic: topic) }; return true }
        let parsed = layout.parse(topic)
        guard case .inbound(_, let kind) = parsed, kind != .profile else { return false }
        // An empty retained message clears a retained one: nothing to apply or refuse.
        if size > 0 { stage.deliver(.retained(topic: topic, parsed: parsed), to: routing.shard(of: parsed)) }
        return true
    }
}
