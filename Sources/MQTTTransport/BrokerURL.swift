import Foundation

/// A broker address: `mqtt://host:port` (default 1883) or `mqtts://host:port` (TLS, default 8883).
package struct BrokerURL: Hashable, Sendable, CustomStringConvertible {
    /// The host name or IP address (an IPv6 address without its brackets).
    package var host: String
    /// The TCP port (1883 for `mqtt://`, 8883 for `mqtts://` unless given).
    package var port: Int32
    /// Whether the connection uses TLS (`mqtts://`).
    package var tls: Bool

    /// Parses a broker URL.
    package init(parsing s: String) throws(MQTTError) {
        let tls: Bool
        var rest: Substring
        if s.hasPrefix("mqtt://") {
            tls = false; rest = s.dropFirst(7)
        } else if s.hasPrefix("mqtts://") {
            tls = true; rest = s.dropFirst(8)
        } else {
            throw .configuration("broker URL '\(s)' must start with mqtt:// or mqtts://")
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var port: Int32 = tls ? 8883 : 1883
        var host = rest
        if rest.hasPrefix("[") {  // [::1]:1883
            guard let close = rest.firstIndex(of: "]") else { throw .configuration("bad IPv6 address in '\(s)'") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = Int32(after.dropFirst()), (1...65535).contains(p) else { throw .configuration("bad port in '\(s)'") }
                port = p
            }
        } else if let colon = rest.lastIndex(of: ":") {
            guard let p = Int32(rest[rest.index(after: colon)...]), (1...65535).contains(p) else { throw .configuration("bad port in '\(s)'") }
            port = p
            host = rest[..<colon]
        }
        guard !host.isEmpty, !host.contains("/") else { throw .configuration("no host in '\(s)'") }
        self.host = String(host)
        self.port = port
        self.tls = tls
    }

    /// Parses a `--broker` value: one broker URL, or the nodes of one broker cluster separated
    /// by commas (`mqtts://nats-1:8883,mqtts://nats-2:8883`), the first the one connected to
    /// first. The nodes must share their clients' sessions (as NATS's MQTT listener does): a
    /// client moves to the next when it loses the one it uses. Every URL has the same scheme
    /// (one TLS setting serves them all) and none is given twice.
    package static func list(parsing s: String) throws(MQTTError) -> [BrokerURL] {
        let parts = s.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard !parts.contains(where: \.isEmpty) else { throw .configuration("empty broker URL in '\(s)'") }
        var urls: [BrokerURL] = []
        for p in parts {
            let u = try BrokerURL(parsing: p)
            guard !urls.contains(u) else { throw .configuration("broker \(u) is given twice in '\(s)'") }
            guard urls.first.map({ $0.tls == u.tls }) ?? true else {
                throw .configuration("the brokers of '\(s)' are all mqtt:// or all mqtts://, not both")
            }
            urls.append(u)
        }
        return urls
    }

    /// The URL with its port always written, IPv6 hosts in brackets: `mqtt://[::1]:1883`.
    package var description: String { "\(tls ? "mqtts" : "mqtt")://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
}
