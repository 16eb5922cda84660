import CLibPQ

/// The checks a PostgreSQL connection string passes before mobilityd connects with it: no
/// password in it (command lines and config files are readable; libpq reads the password from
/// `PGPASSFILE`, `~/.pgpass`, a `passfile=` parameter or `PGPASSWORD`), and TLS that verifies the
/// server (`sslmode=verify-full` or `verify-ca`) for any host that is not the loopback or a
/// Unix socket: the store holds health data.
package enum PostgresURL {
    /// The options libpq would use for `conninfo`: the string's own (`own`), and with the
    /// environment's (`PGHOST`, `PGSSLMODE`, …) where it gives none; throws libpq's message for a
    /// malformed string.
    static func options(_ conninfo: String, environment: [String: String]) throws(PostgresError) -> (own: [String: String], effective: [String: String]) {
        var err: UnsafeMutablePointer<CChar>?
        guard let parsed = PQconninfoParse(conninfo, &err) else {
            let m = err.map { String(cString: $0) } ?? "malformed"
            if let err { PQfreemem(err) }
            throw .configuration("bad PostgreSQL URL: \(m.split(separator: "\n").first ?? "")")
        }
        defer { PQconninfoFree(parsed) }
        var own: [String: String] = [:], out: [String: String] = [:]
        var p = parsed
        while let k = p.pointee.keyword {
            let key = String(cString: k)
            if let v = p.pointee.val {
                own[key] = String(cString: v)
                out[key] = own[key]
            } else if let env = p.pointee.envvar.map({ String(cString: $0) }), let v = environment[env] {
                out[key] = v
            }
            p += 1
        }
        return (own, out)
    }

    /// Whether `host` is this machine: a Unix socket directory, `localhost` or a loopback address.
    static func isLocal(_ host: String) -> Bool {
        host.isEmpty || host.hasPrefix("/") || host.hasPrefix("@") || host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Refuses a connection string with a password in it, or that would reach a host off the
    /// loopback without verified TLS; returns the string to log (`host:port/db`, no user, no secret).
    package static func check(_ conninfo: String, environment: [String: String]) throws(PostgresError) -> String {
        let (own, o) = try options(conninfo, environment: environment)
        if let p = own["password"], !p.isEmpty {
            throw .configuration(
                "the PostgreSQL URL holds a password, which every local user could read (ps, the config file); "
                    + "remove it and give it in a passfile (PGPASSFILE, ~/.pgpass, or ?passfile=FILE, mode 0600) or PGPASSWORD")
        }
        let hosts = (o["hostaddr"].flatMap { $0.isEmpty ? nil : $0 } ?? o["host"] ?? "").split(separator: ",", omittingEmptySubsequences: false).map(
            String.init)
        let remote = hosts.filter { !isLocal($0) }
        let sslmode = o["sslmode"] ?? "prefer"
        if !remote.isEmpty, sslmode != "verify-full", sslmode != "verify-ca" {
            throw .configuration(
                "PostgreSQL host \(remote[0]) is not on the loopback: the connection must use TLS that verifies the server; "
                    + "add sslmode=verify-full (and sslrootcert=CA.pem) to the URL, not sslmode=\(sslmode)")
        }
        let host = o["host"].flatMap { $0.isEmpty ? nil : $0 } ?? "local socket"
        return "postgres://\(host)\(o["port"].map { ":" + $0 } ?? "")/\(o["dbname"] ?? o["user"] ?? "")"
    }
}
