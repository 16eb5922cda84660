import CNATS
import Foundation

/// One connection to a NATS cluster over the NATS protocol (libnats) with its JetStream context:
/// the nodes' client URLs, tried in the order given (the first is the instance's own node; the
/// client moves to the next when one is lost, and reconnects for as long as the connection
/// lives; only to these: the nodes the cluster announces are not used), the account, TLS.
/// A node that keeps the connection open and answers nothing (its process stopped) is left once
/// ``maxPingsOut`` pings every ``pingIntervalMs`` went unanswered (libnats's default is 2
/// minutes), one that stops reading once a write has blocked ``writeDeadlineMs``. Closed on deinit.
///
/// Sendability: libnats's connection and JetStream context are safe to use from several threads;
/// the pointers are set once in `init` and released in `deinit`.
package final class NATSConnection: @unchecked Sendable {
    /// How often libnats pings the node.
    package static let pingIntervalMs: Int64 = 2000
    /// Pings unanswered after which libnats takes the connection for stale and moves to the next
    /// node: a frozen node is left 4–6 s after it stopped answering, within a lease (10 s by
    /// default) of an instance whose NATS connection it held.
    package static let maxPingsOut: Int32 = 2
    /// The longest a write to the node may block (its socket's buffer full: a node, or the way to
    /// it, that no longer reads) before libnats shuts the socket and reconnects; without it a
    /// blocked write holds the connection's lock, and so its ping timer, until TCP gives up.
    package static let writeDeadlineMs: Int64 = 5000
    let nc: OpaquePointer?
    let js: OpaquePointer?

    /// Connects to the nodes at `urls` (`nats://` or `tls://`), logging in as `username` (TLS
    /// with the given files); waits at most `timeoutMs` for the first node to answer.
    package init(
        urls: [String], username: String?, password: String?, caFile: String?, certFile: String?, keyFile: String?, timeoutMs: Int64 = 5000
    ) throws(JetStreamFailure) {
        var opts: OpaquePointer?
        try JetStreamFailure.check(natsOptions_Create(&opts), "cannot create NATS options")
        defer { natsOptions_Destroy(opts) }
        let cs = urls.map { strdup($0) }
        defer { cs.forEach { free($0) } }
        var servers: [UnsafePointer<CChar>?] = cs.map { $0.map { UnsafePointer($0) } }
        let set = servers.withUnsafeMutableBufferPointer { natsOptions_SetServers(opts, $0.baseAddress, Int32($0.count)) }
        try JetStreamFailure.check(set, "bad --nats URL")
        try JetStreamFailure.check(natsOptions_SetNoRandomize(opts, true), "cannot set the NATS server order")
        try JetStreamFailure.check(natsOptions_SetTimeout(opts, timeoutMs), "cannot set the NATS timeout")
        try JetStreamFailure.check(natsOptions_SetMaxReconnect(opts, -1), "cannot set the NATS reconnection")
        try JetStreamFailure.check(natsOptions_SetIgnoreDiscoveredServers(opts, true), "cannot set the NATS servers")
        try JetStreamFailure.check(natsOptions_SetPingInterval(opts, Self.pingIntervalMs), "cannot set the NATS ping interval")
        try JetStreamFailure.check(natsOptions_SetMaxPingsOut(opts, Self.maxPingsOut), "cannot set the NATS pings")
        try JetStreamFailure.check(natsOptions_SetWriteDeadline(opts, Self.writeDeadlineMs), "cannot set the NATS write deadline")
        if let username { try JetStreamFailure.check(natsOptions_SetUserInfo(opts, username, password), "cannot set the NATS account") }
        if urls.contains(where: { $0.hasPrefix("tls://") }) {
            try JetStreamFailure.check(natsOptions_SetSecure(opts, true), "cannot enable TLS (libnats without TLS?)")
            if let caFile { try JetStreamFailure.check(natsOptions_LoadCATrustedCertificates(opts, caFile), "cannot read the CA file \(caFile)") }
            if let certFile, let keyFile {
                try JetStreamFailure.check(natsOptions_LoadCertificatesChain(opts, certFile, keyFile), "cannot read the client certificate")
            }
        }
        var nc: OpaquePointer?
        try JetStreamFailure.check(natsConnection_Connect(&nc, opts), "cannot connect to NATS at \(urls.joined(separator: ","))")
        var js: OpaquePointer?
        let made = natsConnection_JetStream(&js, nc, nil)
        guard made == NATS_OK else {
            natsConnection_Destroy(nc)
            try JetStreamFailure.check(made, "cannot use JetStream")
            preconditionFailure("unreachable")
        }
        self.nc = nc
        self.js = js
    }

    /// Whether the connection is up (not reconnecting, not closed).
    package var isConnected: Bool { natsConnection_Status(nc) == NATS_CONN_STATUS_CONNECTED }

    /// The URL of the node the connection is on (nil while it is not on any).
    package var connectedURL: String? {
        var buffer = [UInt8](repeating: 0, count: 512)
        let s = buffer.withUnsafeMutableBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { natsConnection_GetConnectedUrl(nc, $0.baseAddress, $0.count) }
        }
        guard s == NATS_OK, let end = buffer.firstIndex(of: 0), end > 0 else { return nil }
        return String(decoding: buffer[..<end], as: UTF8.self)
    }

    /// How many times the connection has reconnected (to the same node or another) since it was made.
    package var reconnects: UInt64 {
        var stats: OpaquePointer?
        guard natsStatistics_Create(&stats) == NATS_OK else { return 0 }
        defer { natsStatistics_Destroy(stats) }
        var n: UInt64 = 0
        guard natsConnection_GetStats(nc, stats) == NATS_OK, natsStatistics_GetCounts(stats, nil, nil, nil, nil, &n) == NATS_OK else { return 0 }
        return n
    }

    /// Whether the node answers a PING within `timeoutMs`: the connection is up and the node
    /// on the other end alive (a node killed or cut off without closing the socket looks
    /// connected until its pings time out; this asks now).
    package func answers(timeoutMs: Int64) -> Bool { isConnected && natsConnection_FlushTimeout(nc, timeoutMs) == NATS_OK }

    /// Closes the connection: a fetch, request or acknowledgement waiting on it returns at once
    /// with an error, and nothing more is sent (the pointers stay valid until deinit).
    package func close() { natsConnection_Close(nc) }

    /// Subscriptions unsubscribed and not yet freed (``retire(_:)``), under `retiredLock`.
    private var retired: [OpaquePointer] = []
    private let retiredLock = NSLock()

    /// Unsubscribes `sub` now and frees it once the connection's reader can no longer hold it.
    /// libnats 3.4 (Debian 12) lets the reader thread hold a subscription it looked up without a
    /// reference while another thread frees it (fixed in libnats 3.6.1): a subscription freed
    /// while its connection reads could have the reader write a message into freed memory.
    /// Unsubscribed, the reader no longer finds it and drops what still arrives for it; a flush
    /// answered means the reader has handled everything before the answer (it reads in order),
    /// the unsubscription included, so it is freed then; otherwise when the connection is
    /// closed, which joins the reader. (A consumer bound by name, as ours are, is not deleted by
    /// the unsubscription: libnats deletes only one its subscribe call made.)
    func retire(_ sub: OpaquePointer?) {
        guard let sub else { return }
        _ = natsSubscription_Unsubscribe(sub)
        if natsConnection_FlushTimeout(nc, 1000) == NATS_OK {
            natsSubscription_Destroy(sub)
        } else {
            retiredLock.withLock { retired.append(sub) }
        }
    }

    /// The names of the consumers of `stream` (empty for a stream without any).
    package func consumerNames(stream: String) throws(JetStreamFailure) -> [String] {
        var list: UnsafeMutablePointer<jsConsumerNamesList>?
        var code = jsErrCode(0)
        let s = js_ConsumerNames(&list, js, stream, nil, &code)
        if s == NATS_NOT_FOUND { return [] }  // libnats answers a stream without consumers so
        try JetStreamFailure.check(s, "cannot list the consumers of \(stream)")
        defer { jsConsumerNamesList_Destroy(list) }
        return (0..<Int(list?.pointee.Count ?? 0)).compactMap { i in list?.pointee.List[i].map { String(cString: $0) } }
    }

    /// Deletes consumer `name` of `stream` (one already gone is not an error).
    package func deleteConsumer(stream: String, name: String) throws(JetStreamFailure) {
        var code = jsErrCode(0)
        let s = js_DeleteConsumer(js, stream, name, nil, &code)
        if s == NATS_NOT_FOUND { return }
        try JetStreamFailure.check(s, "cannot delete consumer \(name) of \(stream)")
    }

    /// What a stream is now: the last sequence number it has given a message (0: none yet) and
    /// when it was made (its identity: a stream deleted and made again under the same name
    /// starts its sequences over).
    package struct StreamState: Sendable, Equatable {
        /// The last sequence number the stream has given a message (0: none yet).
        package var lastSequence: UInt64
        /// When the stream was made, in nanoseconds since the epoch (UTC).
        package var created: Int64
    }

    /// What `stream` is now, waiting at most `timeoutMs` for the server.
    package func streamState(stream: String, timeoutMs: Int64 = 5000) throws(JetStreamFailure) -> StreamState {
        var si: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        var options = try jsOptions.waiting(timeoutMs)
        try JetStreamFailure.check(js_GetStreamInfo(&si, js, stream, &options, &code), "cannot read JetStream stream \(stream)")
        defer { jsStreamInfo_Destroy(si) }
        return StreamState(lastSequence: si?.pointee.State.LastSeq ?? 0, created: si?.pointee.Created ?? 0)
    }

    /// Sends `payload` to `subject` with `reply` as its reply subject, without waiting for an answer.
    package func publish(subject: String, reply: String, payload: String) throws(JetStreamFailure) {
        try JetStreamFailure.check(natsConnection_PublishRequestString(nc, subject, reply, payload), "cannot publish to \(subject)")
    }

    deinit {
        jsCtx_Destroy(js)
        // Closed first: that joins the reader thread, after which the retired subscriptions
        // can be freed (each holds a reference to the connection, released as it is).
        natsConnection_Close(nc)
        for sub in retired { natsSubscription_Destroy(sub) }
        natsConnection_Destroy(nc)
    }
}

extension jsOptions {
    /// Options of a JetStream request that waits at most `ms` for the server's answer.
    static func waiting(_ ms: Int64) throws(JetStreamFailure) -> jsOptions {
        var options = jsOptions()
        try JetStreamFailure.check(jsOptions_Init(&options), "cannot make JetStream options")
        options.Wait = ms
        return options
    }
}
