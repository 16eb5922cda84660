import CNATS
import Foundation

/// A durable JetStream pull consumer of one stream, filtered to one subject, acknowledged
/// cumulatively (ack policy `all`: acknowledging a message acknowledges every one before it):
/// batches are fetched, handled, then acknowledged through their last message. Created starting
/// at a given stream sequence, or bound to the consumer of that name if it exists (which keeps
/// its own position). Its settings are the server's defaults otherwise.
///
/// Sendability: one thread fetches and acknowledges at a time (the owner's); the subscription
/// pointer is set once in `init` and given back to the connection in `deinit`.
package final class JetStreamPullConsumer: @unchecked Sendable {
    /// A message fetched, copied out of libnats's.
    package struct Message: Sendable, Equatable {
        /// Its sequence number in the stream.
        package let sequence: UInt64
        /// The consumer's delivery number of it: 1 for the consumer's first delivery, one more
        /// for each after (redeliveries included), so a number skipped is a delivery that never
        /// arrived. (A consumer's new leader may number again from the last delivery its replicas
        /// agreed on: a number repeated.)
        package let delivery: UInt64
        /// Its subject (for a message of NATS's MQTT listener, `$MQTT.msgs.` and the topic as a subject).
        package let subject: String
        package let payload: [UInt8]
        /// How many times the consumer delivered it (1: the first time).
        package let deliveries: UInt64
        /// Where its acknowledgement goes.
        let reply: String
    }

    /// The consumer's progress, as the server has it.
    package struct Position: Sendable, Equatable {
        /// The stream sequence every message up to which is acknowledged.
        package var acknowledgedThrough: UInt64
        /// The last stream sequence delivered (of a filtered consumer: the last it looked at, a
        /// message of another subject included).
        package var deliveredThrough: UInt64
        /// The consumer's last delivery number (``Message/delivery``).
        package var lastDelivery: UInt64
        /// Messages delivered and not yet acknowledged.
        package var pendingAcknowledgement: Int64
        /// Messages of its subject the stream holds that it has not delivered yet.
        package var undelivered: UInt64 = 0
        /// Fetches waiting on it for messages.
        package var waitingFetches: Int64 = 0
        /// Whether every replica of it that is not offline is current with its leader (true
        /// outside a cluster): the consumer is known wherever the stream is kept.
        package var replicasCurrent = true
        package init(acknowledgedThrough: UInt64, deliveredThrough: UInt64, lastDelivery: UInt64, pendingAcknowledgement: Int64) {
            self.acknowledgedThrough = acknowledgedThrough
            self.deliveredThrough = deliveredThrough
            self.lastDelivery = lastDelivery
            self.pendingAcknowledgement = pendingAcknowledgement
        }
    }

    /// The stream and the consumer's name.
    package let stream: String, name: String
    /// Whether `init` created the consumer (false: it existed and was bound).
    package let created: Bool
    private let connection: NATSConnection
    private let sub: OpaquePointer?
    /// Where the pull requests go, and the prefix of their reply subjects.
    private let nextSubject: String, replyPrefix: String
    /// Pull requests sent (each one's reply subject ends with its number).
    private var requests = 0

    /// Creates the durable consumer `name` of `stream` for the messages on `filter` from stream
    /// sequence `startSequence` on (1: from the first the stream holds), or binds to it if it
    /// exists (then `startSequence` is not used: the consumer's own position is); each request
    /// waits at most `timeoutMs` for the server. With `unused`, a consumer bound must have
    /// delivered nothing and start at or before `startSequence` (one whose making timed out and
    /// went through after all); else this fails, not as timed out.
    package init(
        connection: NATSConnection, stream: String, name: String, filter: String, startSequence: UInt64, timeoutMs: Int64 = 5000,
        unused: Bool = false
    ) throws(JetStreamFailure) {
        self.connection = connection
        self.stream = stream
        self.name = name
        var code = jsErrCode(0)
        var options = try jsOptions.waiting(timeoutMs)
        var existing: UnsafeMutablePointer<jsConsumerInfo>?
        let found = js_GetConsumerInfo(&existing, connection.js, stream, name, &options, &code)
        if found == NATS_OK {
            // Bound by name: it must be a pull consumer of these messages.
            let config = existing?.pointee.Config?.pointee
            let filtered = config?.FilterSubject.map { String(cString: $0) } ?? ""
            let push = config?.DeliverSubject != nil
            let delivered = existing?.pointee.Delivered.Consumer ?? 0
            let start =
                config.map { $0.DeliverPolicy == js_DeliverByStartSequence ? $0.OptStartSeq : $0.DeliverPolicy == js_DeliverAll ? 1 : UInt64.max } ?? UInt64.max
            jsConsumerInfo_Destroy(existing)
            guard filtered == filter, !push else {
                throw JetStreamFailure(
                    description: "consumer \(name) of \(stream) is not a pull consumer of \(filter) (\(push ? "push" : "filter \(filtered)")); delete it")
            }
            guard !unused || (delivered == 0 && start <= startSequence) else {
                throw JetStreamFailure(
                    description:
                        "consumer \(name) of \(stream) exists with \(delivered) deliveries from stream sequence \(start == .max ? "?" : String(start)); a new one is wanted from \(startSequence)"
                )
            }
            created = false
        } else if found == NATS_NOT_FOUND {
            var cc = jsConsumerConfig()
            try JetStreamFailure.check(jsConsumerConfig_Init(&cc), "cannot make a consumer configuration")
            var ci: UnsafeMutablePointer<jsConsumerInfo>?
            let s = name.withCString { n in
                filter.withCString { f in
                    cc.Durable = n
                    cc.FilterSubject = f
                    cc.AckPolicy = js_AckAll
                    cc.DeliverPolicy = startSequence > 1 ? js_DeliverByStartSequence : js_DeliverAll
                    cc.OptStartSeq = startSequence > 1 ? startSequence : 0
                    return js_AddConsumer(&ci, connection.js, stream, &cc, &options, &code)
                }
            }
            try JetStreamFailure.check(s, "cannot create consumer \(name) of \(stream) on \(filter)")
            jsConsumerInfo_Destroy(ci)
            created = true
        } else {
            try JetStreamFailure.check(found, "cannot read consumer \(name) of \(stream)")
            preconditionFailure("unreachable")
        }
        // Deliveries and the statuses ending each fetch's request come to `{inbox}.{request}`.
        var inbox: UnsafeMutablePointer<CChar>?
        try JetStreamFailure.check(natsInbox_Create(&inbox), "cannot make an inbox")
        defer { natsInbox_Destroy(inbox) }
        replyPrefix = String(cString: inbox!)
        nextSubject = "$JS.API.CONSUMER.MSG.NEXT.\(stream).\(name)"
        var sub: OpaquePointer?
        try JetStreamFailure.check(natsConnection_SubscribeSync(&sub, connection.nc, "\(replyPrefix).*"), "cannot subscribe for consumer \(name) of \(stream)")
        self.sub = sub
    }

    /// Up to `max` messages, in delivery order, waiting at most `timeoutMs` for them; empty when
    /// none came in time.
    ///
    /// The pull is our own, over a plain subscription (not libnats 3.4's `natsSubscription_Fetch`,
    /// which writes past the end of its message array when a fetch finds more than half its batch
    /// waiting and more arrives: fixed in libnats 3.9). Messages already waiting (the server's
    /// late answer to an earlier fetch, which returned before they came) are taken first; then the
    /// server is asked for the rest with `no_wait` and `expires` (nats-server 2.9 waits for the
    /// first messages and ends the request once it has no more to give; an older server, which
    /// answers such a request at once that it has none, is asked again, to wait). Each request has a reply
    /// subject of its own, so that the status ending an earlier one is not taken for this one's
    /// end; and every request expires, so none lingers on the server. A request the server ends
    /// with nothing delivered (say, too many requests pending) does not make the fetch return
    /// early: it reads until its time is up, as the caller would otherwise ask again at once.
    package func fetch(max: Int, timeoutMs: Int64) throws(JetStreamFailure) -> [Message] {
        precondition(max > 0, "a fetch asks for at least one message")
        var out: [Message] = []
        while out.count < max, let d = try next(timeoutMs: 0) {
            if case .message(let m) = d { out.append(m) }  // an earlier request's end: nothing to do
        }
        guard out.count < max else { return out }
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(Swift.max(timeoutMs, 1)) * 1_000_000
        var noWait = true, over = false
        while true {
            requests += 1
            let reply = "\(replyPrefix).\(requests)"
            let left = Int64(deadline - Swift.min(deadline, DispatchTime.now().uptimeNanoseconds))
            // The server's wait ends 10 ms before ours, so that its end arrives in time.
            let expires = Swift.max(left - 10_000_000, 1_000_000)
            let request = #"{"batch":\#(max - out.count),"expires":\#(expires)\#(noWait ? #","no_wait":true"# : "")}"#
            let sent = natsConnection_PublishRequestString(connection.nc, nextSubject, reply, request)
            try JetStreamFailure.check(sent, "cannot ask consumer \(name) of \(stream) for messages")
            answers: while true {
                // Our request over: what came meanwhile (an earlier request's late answer) goes
                // once nothing more waits on the subscription.
                if over, !out.isEmpty, waiting == 0 { return out }
                let now = DispatchTime.now().uptimeNanoseconds
                guard now < deadline, let d = try next(timeoutMs: Int64((deadline - now + 999_999) / 1_000_000)) else { return out }
                switch d {
                case .message(let m):
                    out.append(m)
                    if out.count == max { return out }
                case .status(let code, let subject, let description):
                    guard subject == reply, !over else { continue }  // an earlier request's end
                    switch code {
                    case "", "100": continue  // not a status; an idle heartbeat (none asked for)
                    case "404" where out.isEmpty && noWait:  // nothing now (an older server): ask again, waiting
                        noWait = false
                        break answers
                    case "409" where description == "Leadership Change" || !out.isEmpty, "404", "408":  // the request is over
                        guard out.isEmpty else { return out }
                        over = true  // read on until the time is up
                    default:
                        throw JetStreamFailure(description: "cannot fetch from consumer \(name) of \(stream): \(code) \(description)")
                    }
                }
            }
        }
    }

    /// What came on the subscription: a message of the stream, or the status that ends a request.
    private enum Delivery {
        case message(Message)
        case status(code: String, subject: String, description: String)
    }

    /// The next delivery, waiting at most `timeoutMs` (0: only one already there); nil when none came.
    private func next(timeoutMs: Int64) throws(JetStreamFailure) -> Delivery? {
        var m: OpaquePointer?
        let s = natsSubscription_NextMsg(&m, sub, timeoutMs)
        if s == NATS_TIMEOUT { return nil }
        try JetStreamFailure.check(s, "cannot fetch from consumer \(name) of \(stream)")
        defer { natsMsg_Destroy(m) }
        let reply = natsMsg_GetReply(m).map { String(cString: $0) } ?? ""
        guard reply.hasPrefix("$JS.ACK.") else {
            var code: UnsafePointer<CChar>?, description: UnsafePointer<CChar>?
            _ = natsMsgHeader_Get(m, "Status", &code)
            _ = natsMsgHeader_Get(m, "Description", &description)
            return .status(
                code: code.map { String(cString: $0) } ?? "", subject: String(cString: natsMsg_GetSubject(m)),
                description: description.map { String(cString: $0) } ?? "")
        }
        var meta: UnsafeMutablePointer<jsMsgMetaData>?
        try JetStreamFailure.check(natsMsg_GetMetaData(&meta, m), "a message of consumer \(name) has no JetStream metadata")
        defer { jsMsgMetaData_Destroy(meta) }
        let n = Int(natsMsg_GetDataLength(m))
        let payload = n == 0 ? [] : natsMsg_GetData(m).withMemoryRebound(to: UInt8.self, capacity: n) { Array(UnsafeBufferPointer(start: $0, count: n)) }
        return .message(
            Message(
                sequence: meta?.pointee.Sequence.Stream ?? 0, delivery: meta?.pointee.Sequence.Consumer ?? 0,
                subject: String(cString: natsMsg_GetSubject(m)), payload: payload,
                deliveries: meta?.pointee.NumDelivered ?? 0, reply: reply))
    }

    /// Deliveries waiting on the subscription, taken by no fetch yet.
    package var waiting: Int {
        var msgs: Int32 = 0, bytes: Int32 = 0
        return natsSubscription_GetPending(sub, &msgs, &bytes) == NATS_OK ? Int(msgs) : 0
    }

    /// A subject the subscription receives on (its fetches' reply subjects are beside it).
    package var inbox: String { "\(replyPrefix).0" }

    /// Acknowledges `message` and every message before it, without waiting for the server: an
    /// acknowledgement lost with a consumer leader is covered by the next one (``position()``
    /// says what the server has), and waiting for its confirmation held a partition up to the
    /// request's timeout whenever the leader was being elected. Throws only when it cannot be
    /// sent (the connection closed).
    package func acknowledge(through message: Message) throws(JetStreamFailure) {
        let s = natsConnection_PublishString(connection.nc, message.reply, "+ACK")
        try JetStreamFailure.check(s, "cannot acknowledge stream sequence \(message.sequence) to consumer \(name) of \(stream)")
    }

    /// The consumer's position as the server has it now.
    package func position(timeoutMs: Int64 = 5000) throws(JetStreamFailure) -> Position {
        var ci: UnsafeMutablePointer<jsConsumerInfo>?
        var code = jsErrCode(0)
        var options = try jsOptions.waiting(timeoutMs)
        try JetStreamFailure.check(
            js_GetConsumerInfo(&ci, connection.js, stream, name, &options, &code), "cannot read consumer \(name) of \(stream)")
        defer { jsConsumerInfo_Destroy(ci) }
        let i = ci!.pointee
        var p = Position(
            acknowledgedThrough: i.AckFloor.Stream, deliveredThrough: i.Delivered.Stream, lastDelivery: i.Delivered.Consumer,
            pendingAcknowledgement: i.NumAckPending)
        p.undelivered = i.NumPending
        p.waitingFetches = i.NumWaiting
        if let cluster = i.Cluster?.pointee, let replicas = cluster.Replicas {
            p.replicasCurrent = (0..<Int(cluster.ReplicasLen)).allSatisfy { r in replicas[r].map { $0.pointee.Current || $0.pointee.Offline } ?? true }
        }
        return p
    }

    deinit {
        // Unbinds without deleting the durable consumer (it keeps the stream's messages for the
        // next owner): the server stops delivering to it now; its memory is freed once a flush
        // is answered, else when the connection is closed (``NATSConnection/retire(_:)``).
        connection.retire(sub)
    }
}
