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

    /// Creates the durable consumer `name` of `stream` for the messages on `filter` from stream
    /// sequence `startSequence` on (1: from the first the stream holds), or binds to it if it
    /// exists (then `startSequence` is not used: the consumer's own position is).
    package init(connection: NATSConnection, stream: String, name: String, filter: String, startSequence: UInt64) throws(JetStreamFailure) {
        self.connection = connection
        self.stream = stream
        self.name = name
        var code = jsErrCode(0)
        var existing: UnsafeMutablePointer<jsConsumerInfo>?
        let found = js_GetConsumerInfo(&existing, connection.js, stream, name, nil, &code)
        if found == NATS_OK {
            jsConsumerInfo_Destroy(existing)
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
                    return js_AddConsumer(&ci, connection.js, stream, &cc, nil, &code)
                }
            }
            try JetStreamFailure.check(s, "cannot create consumer \(name) of \(stream) on \(filter)")
            jsConsumerInfo_Destroy(ci)
            created = true
        } else {
            try JetStreamFailure.check(found, "cannot read consumer \(name) of \(stream)")
            preconditionFailure("unreachable")
        }
        var so = jsSubOptions()
        try JetStreamFailure.check(jsSubOptions_Init(&so), "cannot make subscription options")
        var sub: OpaquePointer?
        let bound = stream.withCString { st in
            name.withCString { n in
                so.Stream = st
                so.Consumer = n
                return js_PullSubscribe(&sub, connection.js, filter, n, nil, &so, &code)
            }
        }
        try JetStreamFailure.check(bound, "cannot bind to consumer \(name) of \(stream)")
        self.sub = sub
    }

    /// Up to `max` messages, in stream order, waiting at most `timeoutMs` for the first; empty
    /// when none came in time.
    ///
    /// Messages already waiting on the subscription (the server's late answer to an earlier
    /// fetch's request, which arrived after that fetch returned) are taken first, one fetch of one
    /// message each: libnats 3.4 (Debian 12) writes past the end of its message array when a
    /// fetch finds more than half its batch waiting and more arrives (it asks the server for the
    /// batch less what waited, then reads until the count equals that smaller number: fixed in
    /// libnats 3.9). A fetch of one takes a waiting message without asking the server for more;
    /// finding only a status waiting (the server's end of an earlier request) it asks for one
    /// message. Left: messages that arrive between the check and libnats's own look at the
    /// subscription — more than half a batch in that instant, the thread descheduled meanwhile
    /// — would still overrun it; a pull of our own over a plain subscription, or libnats 3.9,
    /// would remove that.
    package func fetch(max: Int, timeoutMs: Int64) throws(JetStreamFailure) -> [Message] {
        guard waiting > 0 else { return try fetchBatch(max, timeoutMs: timeoutMs) }
        var out: [Message] = []
        while out.count < max, waiting > 0 {
            let one = try fetchBatch(1, timeoutMs: timeoutMs)
            if one.isEmpty { break }
            out += one
        }
        return out
    }

    /// Messages waiting on the subscription, fetched by no one yet.
    package var waiting: Int {
        var msgs: Int32 = 0, bytes: Int32 = 0
        return natsSubscription_GetPending(sub, &msgs, &bytes) == NATS_OK ? Int(msgs) : 0
    }

    /// The subject the server delivers this subscription's messages to (the answers to its fetches).
    package var inbox: String { natsSubscription_GetSubject(sub).map { String(cString: $0) } ?? "" }

    /// One `natsSubscription_Fetch` of up to `max` messages.
    private func fetchBatch(_ max: Int, timeoutMs: Int64) throws(JetStreamFailure) -> [Message] {
        var list = natsMsgList()
        var code = jsErrCode(0)
        let s = natsSubscription_Fetch(&list, sub, Int32(max), timeoutMs, &code)
        if s == NATS_TIMEOUT { return [] }
        try JetStreamFailure.check(s, "cannot fetch from consumer \(name) of \(stream)")
        defer { natsMsgList_Destroy(&list) }
        var out: [Message] = []
        out.reserveCapacity(Int(list.Count))
        for i in 0..<Int(list.Count) {
            guard let m = list.Msgs[i] else { continue }
            var meta: UnsafeMutablePointer<jsMsgMetaData>?
            try JetStreamFailure.check(natsMsg_GetMetaData(&meta, m), "a message of consumer \(name) has no JetStream metadata")
            defer { jsMsgMetaData_Destroy(meta) }
            let n = Int(natsMsg_GetDataLength(m))
            let payload = n == 0 ? [] : natsMsg_GetData(m).withMemoryRebound(to: UInt8.self, capacity: n) { Array(UnsafeBufferPointer(start: $0, count: n)) }
            out.append(
                Message(
                    sequence: meta?.pointee.Sequence.Stream ?? 0, delivery: meta?.pointee.Sequence.Consumer ?? 0,
                    subject: String(cString: natsMsg_GetSubject(m)), payload: payload,
                    deliveries: meta?.pointee.NumDelivered ?? 0, reply: natsMsg_GetReply(m).map { String(cString: $0) } ?? ""))
        }
        return out
    }

    /// Acknowledges `message` and every message before it, and waits (at most `timeoutMs`)
    /// for the server to confirm it.
    package func acknowledge(through message: Message, timeoutMs: Int64 = 5000) throws(JetStreamFailure) {
        var reply: OpaquePointer?
        let s = natsConnection_RequestString(&reply, connection.nc, message.reply, "+ACK", timeoutMs)
        natsMsg_Destroy(reply)
        try JetStreamFailure.check(s, "cannot acknowledge stream sequence \(message.sequence) to consumer \(name) of \(stream)")
    }

    /// The consumer's position as the server has it now.
    package func position() throws(JetStreamFailure) -> Position {
        var ci: UnsafeMutablePointer<jsConsumerInfo>?
        var code = jsErrCode(0)
        try JetStreamFailure.check(js_GetConsumerInfo(&ci, connection.js, stream, name, nil, &code), "cannot read consumer \(name) of \(stream)")
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
