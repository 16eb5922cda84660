import CCrypto
import CNATS
import Foundation

/// Reads the JetStream streams and consumers behind NATS's MQTT listener over the NATS protocol
/// (libnats), for ``JetStreamRequirements``: the MQTT streams' replicas and the consumers of the
/// partition sessions and of the probe. A consumer is attributed to a session by its name, which
/// NATS's MQTT listener derives from the session's client id (``sessionHash(clientID:)``), and by
/// its filter: another client subscribed to a partition's filter (a `mosquitto_sub` while
/// debugging) is not taken for the partition's session. One connection, closed when done.
package struct JetStreamInspector: Sendable {
    /// Why the broker could not be read.
    package typealias Failure = JetStreamFailure

    /// `--nats`: the nodes' client URLs (`nats://` or `tls://`).
    package let urls: [String]
    package let username: String?
    package let password: String?
    package let caFile: String?
    package let certFile: String?
    package let keyFile: String?

    /// An inspector of the nodes at `urls`, logging in as `username` (TLS with the given files).
    package init(urls: [String], username: String?, password: String?, caFile: String?, certFile: String?, keyFile: String?) {
        self.urls = urls
        self.username = username
        self.password = password
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
    }

    /// An MQTT session and the filter of its subscription (a NATS subject, `$MQTT.msgs.` first);
    /// for a partition, also what the names of its JetStream intake's consumers begin with.
    package struct Session: Sendable {
        package let clientID: String
        package let filter: String
        package let consumerPrefix: String?
        package init(clientID: String, filter: String, consumerPrefix: String? = nil) {
            self.clientID = clientID
            self.filter = filter
            self.consumerPrefix = consumerPrefix
        }
    }

    /// The facts: the MQTT streams, the probe session's consumer, the partition sessions' and
    /// the partitions' pull consumers.
    package func facts(probe: Session, partitions: [Int: Session]) throws(Failure) -> JetStreamFacts {
        let connection = try NATSConnection(
            urls: urls, username: username, password: password, caFile: caFile, certFile: certFile, keyFile: keyFile)
        defer { withExtendedLifetime(connection) {} }
        let js = connection.js
        var facts = JetStreamFacts()
        for name in ["$MQTT_msgs", "$MQTT_sess", "$MQTT_rmsgs"] {
            var si: UnsafeMutablePointer<jsStreamInfo>?
            var code = jsErrCode(0)
            let s = js_GetStreamInfo(&si, js, name, nil, &code)
            if s == NATS_NOT_FOUND { continue }
            try JetStreamFailure.check(s, "cannot read JetStream stream \(name)")
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
        if listed != NATS_NOT_FOUND { try JetStreamFailure.check(listed, "cannot list the consumers of $MQTT_msgs") }
        defer { jsConsumerInfoList_Destroy(list) }
        let probeHash = Self.sessionHash(clientID: probe.clientID)
        let hashes = partitions.mapValues { Self.sessionHash(clientID: $0.clientID) }
        for i in 0..<Int(list?.pointee.Count ?? 0) {
            guard let info = list?.pointee.List[i]?.pointee, let config = info.Config?.pointee, let f = config.FilterSubject else { continue }
            let filter = String(cString: f)
            let c = JetStreamFacts.Consumer(
                name: info.Name.map { String(cString: $0) } ?? "?", maxAckPending: config.MaxAckPending, ackWaitNanoseconds: config.AckWait)
            let owner = c.name.split(separator: "_", maxSplits: 1).first.map(String.init) ?? ""
            if filter == probe.filter, owner == probeHash { facts.probe = c }
            for (k, s) in partitions where s.filter == filter && hashes[k] == owner { facts.partitions[k] = c }
            // By name alone: one made under another topic root or partition prefix counts too.
            for (k, s) in partitions where s.consumerPrefix.map(c.name.hasPrefix) == true { facts.pullConsumers[k, default: []].append(c.name) }
        }
        return facts
    }

    /// What NATS's MQTT listener names a session's JetStream consumers with (`{hash}_{unique}`,
    /// nats-server's `getHash` of the client id, 2.9 and later): the first 8 bytes of the client
    /// id's SHA-256, each as one of 62 digits (the byte modulo 62).
    package static func sessionHash(clientID: String) -> String {
        let digits = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        var digest = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        let bytes = Array(clientID.utf8)
        guard EVP_Digest(bytes, bytes.count, &digest, &size, EVP_sha256(), nil) == 1 else { return "" }
        return String(digest.prefix(8).map { digits[Int($0 % 62)] })
    }

    /// The JetStream filter subject NATS's MQTT listener gives an MQTT topic filter, by its rule
    /// (nats-server's `mqttToNATSSubjectConversion`): levels joined by `.`, `+` as `*`, `#` as `>`,
    /// a `.` within a level as `//` (NATS 2.10.8 and later; earlier releases refuse MQTT topics
    /// with a `.`), and an empty level (a leading, trailing or doubled `/`) as `/` beside its `.`.
    package static func subject(_ filter: String) -> String {
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        let t = Array(filter.utf8)
        var out: [UInt8] = []
        for (i, b) in t.enumerated() {
            switch b {
            case slash where i == 0 || out.last == dot: out += [slash, dot]
            case slash where i == t.count - 1 || t[i + 1] == slash: out += [dot, slash]
            case slash: out.append(dot)
            case dot: out += [slash, slash]
            case UInt8(ascii: "+"): out.append(UInt8(ascii: "*"))
            case UInt8(ascii: "#"): out.append(UInt8(ascii: ">"))
            default: out.append(b)
            }
        }
        if out.last == dot { out.append(slash) }
        return "$MQTT.msgs." + String(decoding: out, as: UTF8.self)
    }

    /// The MQTT topic of a message NATS's MQTT listener stored under `subject` (the inverse of
    /// ``subject(_:)``): nil for a subject not under `$MQTT.msgs.`.
    package static func topic(ofSubject subject: String) -> String? {
        let head = "$MQTT.msgs."
        guard subject.hasPrefix(head) else { return nil }
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        let s = Array(subject.utf8.dropFirst(head.utf8.count))
        var out: [UInt8] = []
        out.reserveCapacity(s.count)
        var i = 0
        while i < s.count {
            switch s[i] {
            case slash where i + 1 < s.count && s[i + 1] == slash:
                out.append(dot)
                i += 1
            case slash: break  // an empty level
            case dot: out.append(slash)
            default: out.append(s[i])
            }
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
