/// A request as a route's handler sees it: the method, the decoded path, the query, and what
/// ``HTTPRouter`` found (the route, its path parameters, the token's name).
package struct HTTPRequest: Sendable {
    /// `GET`, `HEAD`, …
    package var method: String
    /// The path, percent-decoded, without the query.
    package var path: String
    /// The query parameters in request order, percent-decoded (`?flag` has an empty value).
    package var query: [(name: String, value: String)]
    /// More query parameters came than the server collects (``HTTPServer/maxQueryParameters``).
    package var queryOverflow: Bool
    /// The `Authorization` header.
    package var authorization: String?
    /// The peer's address (IPv4), if known.
    package var peer: String?
    /// Whether the request came over TLS.
    package var isTLS: Bool
    /// A `POST`'s body (at most ``HTTPServer/maxBodyBytes``; empty for other methods).
    package var body: [UInt8] = []
    /// The body was longer than the server collects (it was discarded past the limit).
    package var bodyOverflow = false
    /// The `Content-Type` header of a `POST`.
    package var contentType: String?
    /// The `Cookie` header.
    package var cookie: String?
    /// The `Origin` header (browsers send it with every form they post).
    package var origin: String?
    /// The `Host` header.
    package var host: String?

    /// The route's pattern that matched, e.g. `/api/v1/users/{u}/report` (set by the router).
    package internal(set) var route: String?
    /// The path parameters by name, e.g. `["u": "jamie"]` (set by the router).
    package internal(set) var parameters: [String: String] = [:]
    /// The name of the bearer token that authenticated the request (set by the router).
    package internal(set) var principal: String?
    /// The care teams the token is limited to (`teams=` in the tokens file), nil when it is not.
    package internal(set) var teams: [String]?
    /// The console session of a `.session` route's request: its id and the token its forms carry
    /// (set by the router; the session's login is ``principal``, its teams ``teams``).
    package internal(set) var session: (id: String, csrf: String)?
    /// The fields of a form posted to a ``HTTPRouter/postForm(_:access:_:)`` route (set by the router).
    package internal(set) var form = HTMLForm.empty

    package init(
        method: String, path: String, query: [(name: String, value: String)] = [], queryOverflow: Bool = false,
        authorization: String? = nil, peer: String? = nil, isTLS: Bool = false
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.queryOverflow = queryOverflow
        self.authorization = authorization
        self.peer = peer
        self.isTLS = isTLS
    }

    /// A path parameter (`{name}` in the route's pattern).
    package func parameter(_ name: String) -> String? { parameters[name] }

    /// A query parameter's value (the router refuses repeated ones, so there is at most one).
    package func query(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// Whether the path is under `/api/`, whose errors are JSON envelopes.
    package var isAPI: Bool { path == "/api" || path.hasPrefix("/api/") }
}
