import Dispatch
import MobilityModel
import MobilityWire
import RuleEngine
import RuleLanguage

/// What a shard's thread is asked to do.
enum ShardItem: Sendable {
    /// A journalled message (seq 0: not journalled), its topic already parsed by the router.
    case message(seq: UInt64, topic: String, parsed: TopicLayout.Parsed, payload: [UInt8])
    /// A journalled `samples` message of `user` that the ``DecodeStage`` has already decoded
    /// (the payload is not needed after that); handled exactly like ``message(seq:topic:parsed:payload:)``.
    case decodedSamples(seq: UInt64, topic: String, user: String, samples: Result<[WireDecoder.Item<Sample>], Rejection>)
    /// A message whose payload was over the size limit: not copied, not journalled, rejected.
    case oversized(topic: String, parsed: TopicLayout.Parsed, size: Int)
    /// A retained `samples`, `events` or `deletions` message: not copied, not journalled, rejected.
    case retained(topic: String, parsed: TopicLayout.Parsed)
    /// Wall clock: close the days that ended.
    case tick(Timestamp)
    case reload(Program)
    /// Commit pending work (retries after a store failure, flushes acknowledgements).
    case housekeeping
    /// Signalled once everything queued before it has been processed, committed and handed to the broker.
    case barrier(DispatchSemaphore)
    /// A care-staff acknowledgement of an alert instance of one of the shard's users; `taken` is
    /// given the outcome once it is committed and handed to the broker (or refused).
    case acknowledge(AcknowledgementCommand, taken: StaffReceipt?)
    /// A care-staff timeline command (record, correct, retract an entry) for one of the shard's
    /// users; its answer is given once the change is committed (or refused).
    case timeline(TimelineRequest)
    /// Partitioned input (no journal): told once everything queued before it is committed (or
    /// that the shard closed without); the partition session acknowledges its message only then.
    case durable(CommitWaiter)
}
