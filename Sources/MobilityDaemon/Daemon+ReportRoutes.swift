import HTTPEndpoint
import MobilityModel

extension Daemon {
    /// The report listener's routes (`--http-address`). Every route needs a bearer token of
    /// `--http-tokens` unless mounted with `access: .open`; the router answers 401/404/405/400
    /// itself, adds the security headers and its record goes to the access log (see
    /// ``HTTPRouter`` for patterns, query parameters and the rules handlers follow).
    ///
    /// Mount report pages and JSON here, e.g.
    /// `router.get("/api/v1/users/{u}/reports", query: ["week"]) { request in … }`.
    func reportRouter(shards: [Shard]) -> HTTPRouter {
        var router = HTTPRouter(tokens: config.httpTokens)
        // No health data: counts and the rules' identity, for a client to check its token and TLS.
        router.get("/api/v1/status") { [self] request in
            var users = 0
            for s in shards { users += s.stats.withLock { $0.users } }
            var w = JSONWriter()
            w.beginObject()
            w.string("instance", config.instance)
            w.int("users", Int64(users))
            w.int("shards", Int64(shards.count))
            w.string("rulesIdentity", reloader.identity)
            w.string("token", request.principal ?? "")
            w.endObject()
            return .apiSuccess(data: w.text)
        }
        return router
    }
}
