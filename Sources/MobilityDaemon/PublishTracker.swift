import MQTTTransport
import Synchronization

/// What an output topic carries, for the refusal counters and the log.
enum OutputKind: String, Sendable, CaseIterable {
    case alert, series, rejected, ack, status, other

    /// The kind of a topic of the MQTT contract (`…/alerts/{rule}`, `…/series`, `…/rejected`,
    /// `…/acks`, `…/daemon/{instance}/status`).
    init(topic: String) {
        // By position: `…/users/{u}/alerts/{rule}`, `…/users/{u}/series`, `…/users/{u}/rejected`,
        // `…/users/{u}/acks`, `…/rejected`, `…/daemon/{instance}/status` (a user may be named "alerts").
        let parts = topic.split(separator: "/", omittingEmptySubsequences: false)
        if let u = parts.lastIndex(of: "users"), u + 2 < parts.count {
            switch (parts[u + 2], parts.count - u) {
            case ("alerts", 4): self = .alert
            case ("series", 3): self = .series
            case ("rejected", 3): self = .rejected
            case ("acks", 3): self = .ack
            default: self = .other
            }
            return
        }
        let n = parts.count
        if parts.last == "rejected" {
            self = .rejected
        } else if n >= 3, parts[n - 3] == "daemon", parts[n - 1] == "status" {
            self = .status
        } else {
            self = .other
        }
    }
}

/// A publish the broker (MQTT 5 reason code ≥ 0x80) or libmosquitto (a message it can never
/// send) refused. Outbox items among them are parked as dead letters; the rest are counted.
struct Refusal: Sendable, Equatable {
    /// The outbox item, or nil for an untracked publish (commit acknowledgements, status).
    var outboxID: Int64?
    var kind: OutputKind
    /// A stable lower-case label: the MQTT 5 reason (`not_authorized`, `packet_too_large`, …) or
    /// libmosquitto's error (`oversize_packet`, `malformed_utf8`, …).
    var reason: String

    /// The label of an MQTT 5 PUBACK reason code of 0x80 or more.
    static func brokerReason(_ code: Int32) -> String {
        switch code {
        case 0x80: "unspecified_error"
        case 0x83: "implementation_specific_error"
        case 0x87: "not_authorized"
        case 0x90: "topic_name_invalid"
        case 0x91: "packet_identifier_in_use"
        case 0x95: "packet_too_large"
        case 0x97: "quota_exceeded"
        case 0x99: "payload_format_invalid"
        default: "reason_\(code)"
        }
    }

    /// The label of a libmosquitto error that ``MQTTClient/publishFailureIsPermanent(_:)`` calls permanent.
    static func libraryReason(_ rc: Int32) -> String { MQTTClient.publishFailureLabel(rc) }
}

/// Maps in-flight publish message ids to outbox ids and collects the acknowledged and the refused.
///
/// Every publish on the publisher connection is registered here, outbox items with their id and
/// the rest (acknowledgements, status) untracked, so that a broker answer that arrives before its
/// registration (`early`) is always claimed by it: an unclaimed answer left behind would later
/// acknowledge a different message that reuses its id.
final class PublishTracker: Sendable {
    fileprivate struct Entry {
        var outboxID: Int64?
        /// Kept to name the kind of a refusal (classified only then, off the publish path).
        var topic: String
        /// A commit acknowledgement's serial in the sink's ``CommitAckLedger``.
        var ackSerial: UInt64?
    }
    fileprivate struct State {
        var inFlight: [Int32: Entry] = [:]
        /// Answers (reason codes) that arrived before their publish was registered.
        var early: [Int32: Int32] = [:]
        var acked: [Int64] = []
        var refused: [Refusal] = []
        /// Commit acknowledgements the broker answered (accepted or refused): topic and serial.
        var answeredAcks: [(topic: String, serial: UInt64)] = []
        /// Outbox items among `inFlight`.
        var outputsInFlight = 0
    }
    private let state = Mutex(State())
    /// Called after each broker answer, off any lock (``whenAnswered(_:)``). In a class: a
    /// closure held in the Mutex itself came out of each `withLock { $0 }` wrapped in two more
    /// reabstraction thunks, written back through the `inout`, so that every answer made the
    /// next one's call deeper (after ~100 000 answers the network thread spent most of its time
    /// in the chain, and releasing or calling it could overflow the stack).
    private let onAnswer = Mutex<AnswerCallback?>(nil)

    /// Calls `f` after each broker answer (on the network thread: `f` must not block).
    func whenAnswered(_ f: @escaping @Sendable () -> Void) { onAnswer.withLock { $0 = AnswerCallback(call: f) } }

    /// Called when an answer or a permanent failure left an outbox id or a refusal to take (the ack flush).
    private let onOutputsAnswered = Mutex<AnswerCallback?>(nil)

    /// Calls `f` whenever a broker answer or a permanent failure leaves outbox ids or refusals
    /// for ``drain()`` and ``drainRefused()`` (on the network thread: `f` must not block).
    func whenOutputsAnswered(_ f: @escaping @Sendable () -> Void) { onOutputsAnswered.withLock { $0 = AnswerCallback(call: f) } }

    /// What ``whenAnswered(_:)`` or ``whenOutputsAnswered(_:)`` registered.
    private final class AnswerCallback: Sendable {
        let call: @Sendable () -> Void
        init(call: @escaping @Sendable () -> Void) { self.call = call }
    }

    /// Records that message `mid` was published: outbox item `id`, commit acknowledgement
    /// `ackSerial` (``CommitAckLedger``), or another untracked output.
    func published(mid: Int32, id: Int64?, topic: String, ackSerial: UInt64? = nil) {
        let entry = Entry(outboxID: id, topic: topic, ackSerial: ackSerial)
        let outputAnswered = state.withLock { s in
            if let code = s.early.removeValue(forKey: mid) {
                s.settle(entry, code)
                return id != nil || code >= 0x80
            }
            if let old = s.inFlight.updateValue(entry, forKey: mid), old.outboxID != nil { s.outputsInFlight -= 1 }
            if id != nil { s.outputsInFlight += 1 }
            return false
        }
        if outputAnswered { onOutputsAnswered.withLock { $0 }?.call() }
    }

    /// The broker answered message `mid` with `reasonCode` (called on the network thread).
    func answered(mid: Int32, reasonCode: Int32) {
        let outputAnswered = state.withLock { s in
            guard let e = s.inFlight.removeValue(forKey: mid) else {
                s.early[mid] = reasonCode
                return false
            }
            if e.outboxID != nil { s.outputsInFlight -= 1 }
            s.settle(e, reasonCode)
            return e.outboxID != nil || reasonCode >= 0x80
        }
        if outputAnswered { onOutputsAnswered.withLock { $0 }?.call() }
        onAnswer.withLock { $0 }?.call()
    }

    /// libmosquitto refused to send outbox item `id` for good (its error code).
    func failedPermanently(id: Int64, topic: String, rc: Int32) {
        state.withLock { $0.refused.append(Refusal(outboxID: id, kind: OutputKind(topic: topic), reason: Refusal.libraryReason(rc))) }
        onOutputsAnswered.withLock { $0 }?.call()
    }

    /// Takes the acknowledged outbox ids.
    func drain() -> [Int64] {
        state.withLock { s in
            defer { s.acked.removeAll() }; return s.acked
        }
    }
    /// Puts ids back after a failed commit.
    func restore(_ ids: [Int64]) { state.withLock { $0.acked += ids } }
    /// Takes the refusals collected since the last call.
    func drainRefused() -> [Refusal] {
        state.withLock { s in
            defer { s.refused.removeAll() }; return s.refused
        }
    }
    /// Puts refusals back after the store failed to park them.
    func restoreRefused(_ r: [Refusal]) { state.withLock { $0.refused = r + $0.refused } }
    /// Takes the commit acknowledgements answered since the last call.
    func drainAnsweredAcks() -> [(topic: String, serial: UInt64)] {
        state.withLock { s in
            defer { s.answeredAcks.removeAll() }; return s.answeredAcks
        }
    }
    /// Whether outbox ids or refusals wait for ``drain()`` or ``drainRefused()``.
    var hasAnsweredOutputs: Bool { state.withLock { !$0.acked.isEmpty || !$0.refused.isEmpty } }
    /// Publishes not yet answered.
    var inFlight: Int { state.withLock { $0.inFlight.count } }
    /// Outbox items among them.
    var outputsInFlight: Int { state.withLock { $0.outputsInFlight } }
}

extension PublishTracker.State {
    fileprivate mutating func settle(_ e: PublishTracker.Entry, _ code: Int32) {
        if let serial = e.ackSerial { answeredAcks.append((e.topic, serial)) }
        if code < 0x80 {
            if let id = e.outboxID { acked.append(id) }
        } else {
            refused.append(Refusal(outboxID: e.outboxID, kind: OutputKind(topic: e.topic), reason: Refusal.brokerReason(code)))
        }
    }
}
