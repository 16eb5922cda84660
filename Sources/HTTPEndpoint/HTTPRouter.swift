/// Routes requests to handlers by method and path pattern, authenticates them with bearer
/// tokens, enforces the request bounds and answers what no route takes (404, 405, 400, 401,
/// 413, 414, 415): under `/api/` with the JSON error envelope (``HTTPResponse/apiError(_:_:reason:)``), elsewhere
/// in plain text. Every response gets ``HTTPResponse/securityHeaders`` (and HSTS over TLS).
///
/// Mounting a route (the daemon builds its router in `Daemon+ReportRoutes.swift`):
///
/// ```swift
/// var router = HTTPRouter(tokens: tokens)
/// router.get("/api/v1/users/{u}/reports", query: ["week"]) { request in
///     let user = request.parameter("u")!          // matched, 1-128 URL-safe characters
///     let week = request.query("week")            // nil when absent; at most once, bounded
///     return .apiSuccess(data: json)               // or .apiError(.notFound, "no report for that week")
/// }
/// router.get("/users/{u}/report", query: ["week"]) { request in .html(page) }
/// ```
///
/// - Patterns are absolute paths of `/`-separated segments; a `{name}` segment matches one
///   non-empty segment of 1…``Limits/maxParameterBytes`` bytes of `A-Z a-z 0-9 - . _ ~` (other
///   bytes: 400) and is passed as `request.parameter(name)`. No trailing slash, no wildcards.
///   Handlers validate what a parameter means (a known user, a week `2026-W10`).
/// - `query` lists the parameters the route takes: any other, a repeated one or one over the
///   bounds is a 400 before the handler runs.
/// - `access` is `.token` by default: the request must carry `Authorization: Bearer TOKEN` of
///   one of the router's tokens (else 401 with `WWW-Authenticate: Bearer`); the handler sees the
///   token's name as `request.principal`. A router without tokens refuses every `.token` route.
/// - `.write(what)` routes (`POST`) also need the token's line to grant it (`write=events`), else 403.
/// - `HEAD` is answered by the `GET` route (libmicrohttpd drops the body).
/// - Handlers run on the server's thread, one request at a time: keep them quick, and never put
///   health data in an error message (clients' logs keep them) nor in the access log (the
///   router logs the route's pattern, never the path).
package struct HTTPRouter: Sendable {
    /// Who may call a route.
    package enum Access: Sendable {
        /// Anyone who can reach the listener.
        case open
        /// A request with one of the router's bearer tokens.
        case token
        /// A request with a token whose line in the tokens file grants writing this (`write=events`);
        /// another token is answered 403.
        case write(String)
        /// A request of a signed-in console session (its cookie); a form it posts must carry the
        /// session's CSRF token (``HTTPRouter/csrfField``).
        case session

        /// Whether a request needs a bearer token.
        var needsToken: Bool {
            switch self {
            case .open, .session: false
            case .token, .write: true
            }
        }
    }

    /// The request bounds.
    package struct Limits: Sendable {
        /// The longest path (bytes, decoded); longer: 414.
        package var maxPathBytes = 1024
        /// The most query parameters; more: 400.
        package var maxQueryParameters = 8
        /// The longest query parameter name or value (bytes); longer: 400.
        package var maxQueryValueBytes = 256
        /// The longest `{name}` path segment (bytes).
        package var maxParameterBytes = 128
        /// Defaults.
        package init() {}
    }

    /// A route's handler.
    package typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    struct Route: Sendable {
        enum Segment: Sendable, Equatable { case literal(String), parameter(String) }
        let method: String
        let pattern: String
        let segments: [Segment]
        let query: Set<String>
        let access: Access
        /// A `POST` whose body is a form (`application/x-www-form-urlencoded`), not JSON.
        let takesForm: Bool
        let handler: Handler
    }

    private var routes: [Route] = []
    private let tokens: BearerTokens?
    /// The console's sessions (`.session` routes); nil: those routes are refused.
    let sessions: ConsoleSessions?
    /// The origins (`scheme://host[:port]`) the console is served at: a form whose `Origin` is
    /// another is refused.
    let consoleOrigins: [String]
    /// The bounds in force.
    package let limits: Limits
    /// The answer to a form posted to a `.session` route after its session ended (401, nothing
    /// changed); the console sets its sign-in page, so that the person can sign in from it.
    package var sessionEnded = HTTPResponse.text(
        "your session has ended (signed out, or unused too long): sign in again; nothing was changed\n", status: 401)
    /// How the router's own refusals (no such route, a bad path parameter, a form without the
    /// session's CSRF token, a body too large, …) are answered on `prefix` and the paths under it:
    /// the console renders them as its pages, so that a browser shows them with a way back.
    /// Elsewhere they are plain text, and JSON envelopes under `/api/`.
    package var pages: (prefix: String, render: @Sendable (_ status: UInt32, _ message: String) -> HTTPResponse)?

    /// A router that authenticates `.token` routes with `tokens` (none: they are refused).
    /// `sessions` signs in the console's `.session` routes (none: they are refused);
    /// `consoleOrigins` are the origins its pages are served at (a form from any other is refused).
    package init(tokens: BearerTokens?, sessions: ConsoleSessions? = nil, consoleOrigins: [String] = [], limits: Limits = Limits()) {
        self.tokens = tokens
        self.sessions = sessions
        self.consoleOrigins = consoleOrigins
        self.limits = limits
    }

    /// Mounts a `POST` route whose handler reads a JSON body (``HTTPRequest/body``): a body over
    /// ``HTTPServer/maxBodyBytes`` is a 413, one without `Content-Type: application/json` a 415,
    /// before the handler runs.
    package mutating func post(_ pattern: String, access: Access = .token, _ handler: @escaping Handler) {
        add(method: "POST", pattern, query: [], access: access, handler)
    }

    /// Mounts a `POST` route whose handler reads a form (``HTTPRequest/form``): a body over
    /// ``HTTPServer/maxBodyBytes`` is a 413, one without `Content-Type:
    /// application/x-www-form-urlencoded` a 415, one that is not a form a 400, and on a
    /// `.session` route one without the session's CSRF token a 403, before the handler runs.
    package mutating func postForm(_ pattern: String, access: Access = .session, _ handler: @escaping Handler) {
        add(method: "POST", pattern, query: [], access: access, takesForm: true, handler)
    }

    /// Mounts a `GET` (and `HEAD`) route. See the type's documentation for patterns.
    package mutating func get(_ pattern: String, query: Set<String> = [], access: Access = .token, _ handler: @escaping Handler) {
        add(method: "GET", pattern, query: query, access: access, handler)
    }

    /// Mounts a route for `method`. A pattern mounted twice for one method is a programmer error.
    package mutating func add(
        method: String, _ pattern: String, query: Set<String> = [], access: Access = .token, takesForm: Bool = false, _ handler: @escaping Handler
    ) {
        precondition(
            pattern.hasPrefix("/") && (pattern == "/" || !pattern.hasSuffix("/")),
            "route pattern '\(pattern)' must be an absolute path without a trailing slash")
        let segments: [Route.Segment] = pattern.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { s in
            if s.hasPrefix("{"), s.hasSuffix("}"), s.count > 2 { return .parameter(String(s.dropFirst().dropLast())) }
            precondition(!s.contains("{") && !s.contains("}"), "route pattern '\(pattern)': '{' and '}' only around a whole segment")
            return .literal(String(s))
        }
        precondition(
            !routes.contains { $0.method == method && $0.segments.map(Self.shape) == segments.map(Self.shape) },
            "route \(method) \(pattern) is mounted twice")
        routes.append(
            Route(method: method, pattern: pattern, segments: segments, query: query, access: access, takesForm: takesForm, handler: handler))
    }

    /// The mounted routes as `METHOD PATTERN`, in mounting order.
    package var mounted: [String] { routes.map { "\($0.method) \($0.pattern)" } }

    /// Answers a request, with the access-log record of the exchange.
    package func respond(to incoming: HTTPRequest) -> (HTTPResponse, HTTPAccessRecord) {
        var request = incoming
        let (response, route) = answer(&request)
        var r = response
        // A response with its own (stricter) policy keeps it: two policies would both apply.
        r.headers += HTTPResponse.securityHeaders.filter { r.header($0.name) == nil }
        if request.isTLS { r.headers.append(("Strict-Transport-Security", "max-age=31536000")) }
        let accepted = route.map { route in request.query.map(\.name).filter { route.query.contains($0) } } ?? []
        let record = HTTPAccessRecord(
            method: HTTPAccessRecord.loggedMethod(request.method), route: route?.pattern ?? "-",
            queryNames: r.status < 400 ? accepted : [], principal: request.principal ?? "-",
            status: r.status, bytes: r.bytes.count, peer: request.peer ?? "-", tls: request.isTLS)
        return (r, record)
    }

    /// The router's own refusal of `request`: a JSON envelope under `/api/`, a page under
    /// ``pages``' prefix, else plain text.
    func refusal(_ request: HTTPRequest, _ type: APIErrorType, _ message: String) -> HTTPResponse {
        if request.isAPI { return .apiError(type, message) }
        if let pages, request.path == pages.prefix || request.path.hasPrefix(pages.prefix + "/") { return pages.render(type.status, message) }
        return .text(message + "\n", status: type.status)
    }

    private func answer(_ request: inout HTTPRequest) -> (HTTPResponse, Route?) {
        func fail(_ type: APIErrorType, _ message: String) -> HTTPResponse { refusal(request, type, message) }
        guard request.path.utf8.count <= limits.maxPathBytes else {
            return (fail(.tooLong, "the path is longer than \(limits.maxPathBytes) bytes"), nil)
        }
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard request.path.hasPrefix("/") else { return (fail(.notFound, "not found"), nil) }
        let candidates = routes.filter { Self.matches($0.segments, parts) }
        guard !candidates.isEmpty else { return (fail(.notFound, "not found"), nil) }
        let method = request.method == "HEAD" ? "GET" : request.method
        guard let route = candidates.first(where: { $0.method == method }) else {
            let allowed = Set(candidates.map(\.method) + (candidates.contains { $0.method == "GET" } ? ["HEAD"] : [])).sorted()
            return (
                fail(
                    .methodNotAllowed,
                    "method \(HTTPAccessRecord.loggedMethod(request.method)) is not allowed here; allowed: \(allowed.joined(separator: ", "))"
                )
                .adding("Allow", allowed.joined(separator: ", ")), route0(candidates)
            )
        }
        if route.access.needsToken {
            guard let header = request.authorization else {
                return (
                    fail(.unauthorized, "authentication required: send 'Authorization: Bearer TOKEN'")
                        .adding("WWW-Authenticate", "Bearer realm=\"mobilityd\""), route
                )
            }
            guard let name = tokens?.name(forAuthorization: header) else {
                return (
                    fail(.unauthorized, "the bearer token is not valid")
                        .adding("WWW-Authenticate", "Bearer realm=\"mobilityd\", error=\"invalid_token\""), route
                )
            }
            request.principal = name
            request.teams = tokens?.teams(of: name)
            if case .write(let what) = route.access, tokens?.writes(of: name).contains(what) != true {
                return (fail(.forbidden, "this token may only read; its line in the tokens file needs write=\(what)"), route)
            }
        }
        var parameters: [String: String] = [:]
        for (segment, part) in zip(route.segments, parts) {
            guard case .parameter(let name) = segment else { continue }
            guard part.utf8.count <= limits.maxParameterBytes, part.utf8.allSatisfy(Self.isUnreserved) else {
                return (fail(.badData, "path parameter '\(name)' must be 1-\(limits.maxParameterBytes) characters of A-Z a-z 0-9 - . _ ~"), route)
            }
            parameters[name] = String(part)
        }
        if case .session = route.access, let refusal = signedIn(&request) { return (refusal, route) }
        if route.method == "POST" {
            if request.bodyOverflow { return (fail(.payloadTooLarge, "the body is larger than \(HTTPServer.maxBodyBytes) bytes"), route) }
            let type = request.contentType?.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            if route.takesForm {
                if let refusal = formRead(&request, type: type, route: route) { return (refusal, route) }
            } else if type != "application/json" {
                return (fail(.unsupportedMediaType, "send the body as JSON, with 'Content-Type: application/json'"), route)
            }
        }
        if request.queryOverflow || request.query.count > limits.maxQueryParameters {
            return (fail(.badData, "more than \(limits.maxQueryParameters) query parameters"), route)
        }
        var seen: Set<String> = []
        for (name, value) in request.query {
            guard route.query.contains(name) else {
                let known = route.query.isEmpty ? "this path takes none" : "known: " + route.query.sorted().joined(separator: ", ")
                return (fail(.badData, "unknown query parameter (\(known))"), route)
            }
            guard seen.insert(name).inserted else { return (fail(.badData, "query parameter '\(name)' is given more than once"), route) }
            guard value.utf8.count <= limits.maxQueryValueBytes else {
                return (fail(.badData, "query parameter '\(name)' is longer than \(limits.maxQueryValueBytes) bytes"), route)
            }
        }
        request.route = route.pattern
        request.parameters = parameters
        return (route.handler(request), route)
    }

    /// The route logged for a 405: the path's pattern (of the first route that has it).
    private func route0(_ candidates: [Route]) -> Route? { candidates.first }

    private static func matches(_ segments: [Route.Segment], _ parts: ArraySlice<Substring>) -> Bool {
        guard segments.count == parts.count else { return false }
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let s): if part != s { return false }
            case .parameter: if part.isEmpty { return false }
            }
        }
        return true
    }

    private static func shape(_ s: Route.Segment) -> String {
        if case .literal(let l) = s { return l } else { return "{}" }
    }

    private static func isUnreserved(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b == 0x2d || b == 0x2e || b == 0x5f || b == 0x7e
    }
}
