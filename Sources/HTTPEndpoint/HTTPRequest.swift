/// A request as a route's handler sees it: the method, the decoded path, the query, and what
/// ``HTTPRouter`` found (the route, its path parameters, the token's name).
public struct HTTPRequest: Sendable {
    /// `GET`, `HEAD`, …
    public var method: String
    /// The path, percent-decoded, without the query.
    public var path: String
    /// The query parameters in request order, percent-decoded (`?flag` has an empty value).
    public var query: [(name: String, value: String)]
    /// More query parameters came than the server collects (``HTTPServer/maxQueryParameters``).
    public var queryOverflow: Bool
    /// The `Authorization` header.
    public var authorization: String?
    /// The peer's address (IPv4), if known.
    public var peer: String?
    /// Whether the request came over TLS.
    public var isTLS: Bool
    /// A `POST`'s body (at most ``HTTPServer/maxBodyBytes``; empty for other methods).
    public var body: [UInt8] = []
    /// The body was longer than the server collects (it was discarded past the limit).
    public var bodyOverflow = false
    /// The `Content-Type` header of a `POST`.
    public var contentType: String?

    /// The route's pattern that matched, e.g. `/api/v1/users/{u}/report` (set by the router).
    public internal(set) var route: String?
    /// The path parameters by name, e.g. `["u": "jamie"]` (set by the router).
    public internal(set) var parameters: [String: String] = [:]
    /// The name of the bearer token that authenticated the request (set by the router).
    public internal(set) var principal: String?
    /// The care teams the token is limited to (`teams=` in the tokens file), nil when it is not.
    public internal(set) var teams: [String]?

    /// Creates a request.
    public init(
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
    public func parameter(_ name: String) -> String? { parameters[name] }

    /// A query parameter's value (the router refuses repeated ones, so there is at most one).
    public func query(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// Whether the path is under `/api/`, whose errors are JSON envelopes.
    public var isAPI: Bool { path == "/api" || path.hasPrefix("/api/") }
}
