import Glibc
import HTTPEndpoint

/// The report listener's settings (`--http-address`, `--http-tokens`, `--http-tls-cert`,
/// `--http-tls-key`): checked and read at load, so that a listener that would expose health data
/// is a configuration error (exit 2) before anything starts.
///
/// The rules: the listener is off unless `--http-address` is set; when on, it always needs a
/// tokens file (every local user can reach a loopback port), which must not be accessible to
/// group or others; off loopback (any address outside 127.0.0.0/8, `0.0.0.0` included) it also
/// needs TLS. The TLS key must be private like the tokens; the certificate may be public.
extension DaemonConfiguration {
    static let httpOptions: [Option] = [
        Option(
            name: "http-address", value: "HOST:PORT|off", help: "care-team reports and the JSON API, bearer tokens required (default off; off loopback TLS too)"
        ),
        Option(name: "http-tokens", value: "FILE", help: "NAME:TOKEN lines, one per client (mode 0600 or 0400); the access log shows NAME"),
        Option(name: "http-tls-cert", value: "FILE", help: "PEM certificate (chain) of the report listener"),
        Option(name: "http-tls-key", value: "FILE", help: "PEM private key of the report listener (mode 0600 or 0400)"),
        Option(
            name: "console-staff", value: "FILE",
            help: "the care-team console at /console: LOGIN:HASH teams=T1,T2 lines, HASH from mosquitto_passwd (mode 0600 or 0400)"),
        Option(
            name: "console-origin", value: "URL[,URL...]",
            help: "the origins browsers reach the console at, e.g. https://ward.example behind a proxy (default the listener's own http(s)://HOST:PORT)"),
        Option(name: "console-session-idle", value: "MINUTES", help: "a console session unused this long ends (1-1440, default 30)"),
        Option(
            name: "console-session-max", value: "MINUTES",
            help: "a console session ends this long after sign-in whatever the use (1-10080, default 720: a shift), at least --console-session-idle")
    ]

    /// The console's options that need `--console-staff`.
    static let consoleOptionNames = ["console-staff", "console-origin", "console-session-idle", "console-session-max"]

    /// Whether an IPv4 `HOST:PORT` is on a loopback address (127.0.0.0/8).
    static func isLoopback(_ address: String) -> Bool {
        address.hasPrefix("127.") && address.split(separator: ".").count == 4
    }

    mutating func applyHTTP(_ m: [String: String]) throws(Problem) {
        if (m["http-tls-cert"] == nil) != (m["http-tls-key"] == nil) { throw Problem(description: "--http-tls-cert and --http-tls-key go together") }
        guard let address = m["http-address"], address != "off" else {
            for name in Self.consoleOptionNames where m[name] != nil {
                throw Problem(description: "--\(name) needs the report listener (--http-address), which serves the console")
            }
            httpAddress = nil
            return
        }
        guard let colon = address.lastIndex(of: ":"), UInt16(address[address.index(after: colon)...]) != nil else {
            throw Problem(description: "--http-address '\(address)' must be HOST:PORT (an IPv4 literal such as 127.0.0.1:9465) or off")
        }
        var probe = in_addr()
        guard inet_pton(AF_INET, String(address[..<colon]), &probe) == 1 else {
            throw Problem(description: "--http-address '\(address)' needs an IPv4 literal host such as 127.0.0.1")
        }
        let loopback = Self.isLoopback(address)
        guard let tokensPath = m["http-tokens"] else {
            throw Problem(
                description: "the report listener on \(address) serves health data and needs --http-tokens FILE "
                    + "(NAME:TOKEN lines, mode 0600; e.g. 'care-team:' followed by the output of 'openssl rand -hex 32'), even on loopback, "
                    + "which every local user can reach; or set --http-address off")
        }
        if !loopback, m["http-tls-cert"] == nil {
            throw Problem(
                description: "refusing to serve health data on \(address), which is not loopback, without TLS: "
                    + "give --http-tls-cert FILE and --http-tls-key FILE, or listen on 127.0.0.1 behind a TLS-terminating proxy")
        }
        let (text, mode) = try Self.readPrivate(tokensPath, what: "http tokens file")
        if mode & 0o077 != 0 { throw Problem(description: Self.looseFile(tokensPath, mode: mode, what: "http tokens file", holds: "bearer tokens")) }
        do { httpTokens = try BearerTokens(parsing: text) } catch {
            throw Problem(description: "http tokens file \(tokensPath)" + (error.line.map { ":\($0)" } ?? "") + ": " + error.message)
        }
        if let certPath = m["http-tls-cert"], let keyPath = m["http-tls-key"] {
            guard HTTPServer.supportsTLS else { throw Problem(description: "--http-tls-cert: this libmicrohttpd was built without TLS") }
            let (cert, _) = try Self.readPrivate(certPath, what: "http TLS certificate")
            let (key, keyMode) = try Self.readPrivate(keyPath, what: "http TLS key")
            if keyMode & 0o077 != 0 { throw Problem(description: Self.looseFile(keyPath, mode: keyMode, what: "http TLS key", holds: "the private key")) }
            guard cert.contains("-----BEGIN CERTIFICATE-----") else { throw Problem(description: "http TLS certificate \(certPath) holds no PEM certificate") }
            guard key.contains("PRIVATE KEY-----") else { throw Problem(description: "http TLS key \(keyPath) holds no PEM private key") }
            httpTLS = HTTPServer.TLS(certificatePEM: cert, keyPEM: key)
        }
        if let staffPath = m["console-staff"] { consoleStaff = try Self.readConsoleStaff(staffPath) }
        try applyConsoleSessions(m)
        consoleOrigins = try m["console-origin"].map(Self.consoleOrigins) ?? [(httpTLS == nil ? "http://" : "https://") + address]
        httpAddress = address
    }

    /// `--console-session-idle` and `--console-session-max` (minutes): whole numbers in range, the
    /// idle time no longer than the whole, and only with a console.
    mutating func applyConsoleSessions(_ m: [String: String]) throws(Problem) {
        func minutes(_ name: String, _ range: ClosedRange<Int64>) throws(Problem) -> Int64? {
            guard let v = m[name] else { return nil }
            guard m["console-staff"] != nil else { throw Problem(description: "--\(name) needs the console (--console-staff)") }
            guard let n = Int64(v), range.contains(n) else {
                throw Problem(description: "--\(name) must be a whole number of minutes in \(range.lowerBound)...\(range.upperBound), not '\(v)'")
            }
            return n
        }
        if let idle = try minutes("console-session-idle", 1...1440) { consoleSessionPolicy.idleMilliseconds = idle * 60_000 }
        if let max = try minutes("console-session-max", 1...10_080) { consoleSessionPolicy.absoluteMilliseconds = max * 60_000 }
        let p = consoleSessionPolicy
        guard p.idleMilliseconds <= p.absoluteMilliseconds else {
            throw Problem(
                description:
                    "--console-session-idle (\(p.idleMilliseconds / 60_000) min) is longer than --console-session-max (\(p.absoluteMilliseconds / 60_000) min): "
                    + "a session would end at the maximum before it could be idle that long")
        }
    }

    /// The origins of `--console-origin`: `http(s)://HOST[:PORT]` each, compared byte for byte with
    /// a browser's `Origin` (so lower-case, no default port, no path).
    static func consoleOrigins(_ list: String) throws(Problem) -> [String] {
        var origins: [String] = []
        for item in list.split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
            var origin = item
            if origin.hasSuffix("/") { origin.removeLast() }
            let scheme = origin.hasPrefix("https://") ? "https://" : origin.hasPrefix("http://") ? "http://" : nil
            let hostPort = (scheme.map { origin.dropFirst($0.count) } ?? "").split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let host = hostPort.first ?? "", port = hostPort.count == 2 ? String(hostPort[1]) : nil
            guard let scheme, !host.isEmpty, host.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "." || $0 == "-") }),
                port.map({ p in UInt16(p).map { $0 > 0 && String($0) == p } ?? false }) ?? true
            else {
                throw Problem(
                    description: "--console-origin '\(item)' must be http(s)://HOST[:PORT] as a browser's address bar shows it "
                        + "(lower-case, no path), e.g. https://ward.example")
            }
            if port == (scheme == "https://" ? "443" : "80") {
                throw Problem(description: "--console-origin '\(item)': leave out the default port (a browser's Origin does)")
            }
            origins.append(origin)
        }
        return origins
    }

    /// Reads the console's staff file: private like the tokens (it holds password hashes).
    static func readConsoleStaff(_ path: String) throws(Problem) -> StaffPasswords {
        let (text, mode) = try Self.readPrivate(path, what: "console staff file")
        if mode & 0o077 != 0 { throw Problem(description: Self.looseFile(path, mode: mode, what: "console staff file", holds: "password hashes")) }
        do { return try StaffPasswords(parsing: text) } catch {
            throw Problem(description: "console staff file \(path)" + (error.line.map { ":\($0)" } ?? "") + ": " + error.message)
        }
    }

    static func looseFile(_ path: String, mode: mode_t, what: String, holds: String) -> String {
        "\(what) \(path) holds \(holds) but is accessible to group or others (mode 0\(String(mode, radix: 8))); "
            + "run 'chmod 600 \(path)' (owned by the user mobilityd runs as)"
    }
}
