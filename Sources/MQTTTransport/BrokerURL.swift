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

    /// The URL with its port always written, IPv6 hosts in brackets: `mqtt://[::1]:1883`.
    package var description: String { "\(tls ? "mqtts" : "mqtt")://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
}
