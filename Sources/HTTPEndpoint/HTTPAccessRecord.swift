/// One line of the access log: who asked for what and what they got, without anything that
/// could carry health data. The path is the route's *pattern* (`/api/v1/users/{u}/report`), never
/// the request's path, so no user id is logged; of the query only the parameter *names*; of the
/// credentials only the token's name.
package struct HTTPAccessRecord: Sendable, Equatable {
    /// The request method (`GET`; anything else as `OTHER`, so a client cannot write the log).
    package var method: String
    /// The matched route's pattern, or `-` when none matched.
    package var route: String
    /// The names of the query parameters the route accepted (empty when refused).
    package var queryNames: [String]
    /// The authenticating token's name, or `-`.
    package var principal: String
    /// The status sent.
    package var status: UInt32
    /// The body's length in bytes.
    package var bytes: Int
    /// The peer's IPv4 address, or `-`.
    package var peer: String
    /// Whether the request came over TLS.
    package var tls: Bool

    package init(method: String, route: String, queryNames: [String], principal: String, status: UInt32, bytes: Int, peer: String, tls: Bool) {
        self.method = method
        self.route = route
        self.queryNames = queryNames
        self.principal = principal
        self.status = status
        self.bytes = bytes
        self.peer = peer
        self.tls = tls
    }

    /// The log fields, in order.
    package var fields: [(String, String)] {
        [
            ("token", principal), ("method", method), ("route", route), ("query", queryNames.isEmpty ? "-" : queryNames.joined(separator: ",")),
            ("status", String(status)), ("bytes", String(bytes)), ("peer", peer), ("tls", tls ? "true" : "false")
        ]
    }

    /// The methods logged by name; others as `OTHER`.
    static func loggedMethod(_ m: String) -> String {
        ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"].contains(m) ? m : "OTHER"
    }
}
