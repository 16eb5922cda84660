import CNATS
import Foundation

/// Reads the JetStream streams and consumers behind NATS's MQTT listener over the NATS protocol
/// (libnats), for ``JetStreamRequirements``: the MQTT streams' replicas and the consumers whose
/// filter is a partition's or the probe's. One connection, closed when done.
struct JetStreamInspector {
    /// Why the broker could not be read.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// `--nats`: the nodes' client URLs (`nats://` or `tls://`).
    let urls: [String]
    let username: String?
    let password: String?
    let caFile: String?
    let certFile: String?
    let keyFile: String?

    /// The facts: the MQTT streams, the consumer whose filter subject is `probeFilter`, and the
    /// consumers whose filter subject is `partitionFilters[k]` (NATS subjects, `$MQTT.msgs.` first).
    func facts(probeFilter: String, partitionFilters: [Int: String]) throws(Failure) -> JetStreamFacts {
        let nc = try connect()
        defer { natsConnection_Destroy(nc) }
        var js: OpaquePointer?
        try check(natsConnection_JetStream(&js, nc, nil), "cannot use JetStream")
        defer { jsCtx_Destroy(js) }
        var facts = JetStreamFacts()
        for name in ["$MQTT_msgs", "$MQTT_sess", "$MQTT_rmsgs"] {
            var si: UnsafeMutablePointer<jsStreamInfo>?
            var code = jsErrCode(0)
            let s = js_GetStreamInfo(&si, js, name, nil, &code)
            if s == NATS_NOT_FOUND { continue }
            try check(s, "cannot read JetStream stream \(name)")
            defer { jsStreamInfo_Destroy(si) }
            guard let info = si?.pointee, let config = info.Config?.pointee else { continue }
            let clustered = info.Cluster?.pointee.Name.map { strlen($0) > 0 } ?? false
            facts.streams.append(.init(name: name, replicas: Int(config.Replicas), clustered: clustered))
        }
        guard facts.streams.contains(where: { $0.name == "$MQTT_msgs" }) else { return facts }
        var list: UnsafeMutablePointer<jsConsumerInfoList>?
        var code = jsErrCode(0)
        let listed = js_Consumers(&list, js, "$MQTT_msgs", nil, &code)
        // libnats answers a stream without any consumer with NOT_FOUND: an empty list.
        if listed != NATS_NOT_FOUND { try check(listed, "cannot list the consumers of $MQTT_msgs") }
        defer { jsConsumerInfoList_Destroy(list) }
        let byFilter = Dictionary(partitionFilters.map { ($0.value, $0.key) }, uniquingKeysWith: { a, _ in a })
        for i in 0..<Int(list?.pointee.Count ?? 0) {
            guard let info = list?.pointee.List[i]?.pointee, let config = info.Config?.pointee, let f = config.FilterSubject else { continue }
            let filter = String(cString: f)
            let c = JetStreamFacts.Consumer(
                name: info.Name.map { String(cString: $0) } ?? "?", maxAckPending: config.MaxAckPending, ackWaitNanoseconds: config.AckWait)
            if filter == probeFilter { facts.probe = c }
            if let k = byFilter[filter] { facts.partitions[k] = c }
        }
        return facts
    }

    private func connect() throws(Failure) -> OpaquePointer? {
        var opts: OpaquePointer?
        try check(natsOptions_Create(&opts), "cannot create NATS options")
        defer { natsOptions_Destroy(opts) }
        let cs = urls.map { strdup($0) }
        defer { cs.forEach { free($0) } }
        var servers: [UnsafePointer<CChar>?] = cs.map { $0.map { UnsafePointer($0) } }
        let set = servers.withUnsafeMutableBufferPointer { natsOptions_SetServers(opts, $0.baseAddress, Int32($0.count)) }
        try check(set, "bad --nats URL")
        try check(natsOptions_SetTimeout(opts, 5000), "cannot set the NATS timeout")
        if let username { try check(natsOptions_SetUserInfo(opts, username, password), "cannot set the NATS account") }
        if urls.contains(where: { $0.hasPrefix("tls://") }) {
            try check(natsOptions_SetSecure(opts, true), "cannot enable TLS (libnats without TLS?)")
            if let caFile { try check(natsOptions_LoadCATrustedCertificates(opts, caFile), "cannot read the CA file \(caFile)") }
            if let certFile, let keyFile { try check(natsOptions_LoadCertificatesChain(opts, certFile, keyFile), "cannot read the client certificate") }
        }
        var nc: OpaquePointer?
        try check(natsConnection_Connect(&nc, opts), "cannot connect to NATS at \(urls.joined(separator: ","))")
        return nc
    }

    private func check(_ s: natsStatus, _ what: String) throws(Failure) {
        guard s != NATS_OK else { return }
        var reason = String(cString: natsStatus_GetText(s))
        if let last = nats_GetLastError(nil), strlen(last) > 0 { reason = String(cString: last) }
        throw Failure(description: "\(what): \(reason)")
    }
}
