import CareReports
import HTTPEndpoint
import MobilityModel
import RuleLanguage
import StateStore

extension Daemon {
    /// The report listener's routes (`--http-address`). Every route needs a bearer token of
    /// `--http-tokens` unless mounted with `access: .open`; the router answers 401/404/405/400
    /// itself, adds the security headers and its record goes to the access log (see
    /// ``HTTPRouter`` for patterns, query parameters and the rules handlers follow).
    ///
    /// Mount report pages and JSON here, e.g.
    /// `router.get("/api/v1/users/{u}/reports", query: ["week"]) { request in … }`.
    /// `deliver` hands a care-staff timeline command (taken by `timelines`) to its user's shard (the POST route waits for
    /// the answer the shard gives); `sessions` are the console's (nil: no console).
    func reportRouter(
        shards: [Shard], store: any StateBackend, timelines: TimelineDesk, sessions: ConsoleSessions?, console: ConsoleDesks,
        deliver: @escaping @Sendable (TimelineRequest) -> Void
    ) -> HTTPRouter {
        var router = HTTPRouter(tokens: config.httpTokens, sessions: sessions, consoleOrigins: config.consoleOrigins)
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
        mountHistoryAPI(&router, store: store)
        mountTimelineAPI(&router, store: store, desk: timelines, deliver: deliver)
        mountPages(&router, store: store)
        if let sessions { mountConsole(&router, sessions: sessions, desks: console) }
        return router
    }

    /// Every user route answers 404 for a user its token may not read (``CareTeams/readableUser(_:)``),
    /// as for a user without history: a token limited to teams learns nothing of other users.
    ///
    /// The care-team pages (HTML with inline SVG, no scripts, no external assets):
    /// `/users/{u}/report[?week=2026-W10]` (the weekly report, latest by default) and
    /// `/users/{u}/panel` (recovery panel, gait-quality card and six-minute walks over the 30 days
    /// before to 60 after the latest clinical event). Drawn with the current rules' report block.
    func mountPages(_ router: inout HTTPRouter, store: any StateBackend) {
        let careTeams = careTeams
        router.get("/users/{u}/report", query: ["week"]) { [reloader, careTeams] request in
            guard let u = careTeams.readableUser(request) else { return .text("no such user", status: 404) }
            let week = request.query("week")
            if let week, ISOWeek(parsing: week) == nil { return .text("week must look like 2026-W10", status: 400) }
            guard let declared = reloader.report else { return .text("the rules declare no report block", status: 404) }
            do {
                guard let r = try store.weeklyReport(of: u, week: week) else { return .text("no such weekly report", status: 404) }
                guard case .success(let digest) = WeeklyDigest.decode(r.payload) else { return .text("the stored report cannot be read", status: 500) }
                let history = try store.history(of: u, from: digest.firstDay - 120, through: digest.lastDay)
                return .html(ReportPage.weekly(digest: digest, history: history, spec: ReportSpec(declared)))
            } catch {
                return .text("the state store could not be read", status: 500)
            }
        }
        router.get("/users/{u}/panel") { [reloader, careTeams] request in
            guard let u = careTeams.readableUser(request) else { return .text("no such user", status: 404) }
            guard let declared = reloader.report else { return .text("the rules declare no report block", status: 404) }
            do {
                let history = try store.history(of: u, from: .min, through: .max)
                guard !history.series.isEmpty else { return .text("no recorded series for this user", status: 404) }
                return .html(ReportPage.panel(history: history, spec: ReportSpec(declared)))
            } catch {
                return .text("the state store could not be read", status: 500)
            }
        }
    }

    /// The care-team history as JSON (`/api/v1/users/{u}/…`): the weeks with reports, one weekly
    /// report, the recorded series and the alert episodes. Values as published (each series in
    /// its rule's unit); days are the user's local dates. A user without history is 404.
    func mountHistoryAPI(_ router: inout HTTPRouter, store: any StateBackend) {
        let careTeams = careTeams
        router.get("/api/v1/users/{u}/reports") { request in
            guard let u = careTeams.readableUser(request) else { return .apiError(.notFound, "no such user") }
            return HistoryAPI.answer { () throws -> HTTPResponse in
                let weeks = try store.reportWeeks(of: u)
                guard !weeks.isEmpty else { return .apiError(.notFound, "no weekly report for this user") }
                var w = JSONWriter()
                w.beginObject()
                w.beginArray("weeks")
                for k in weeks { w.string(nil, k) }
                w.endArray()
                w.endObject()
                return .apiSuccess(data: w.text)
            }
        }
        router.get("/api/v1/users/{u}/reports/weekly", query: ["week"]) { request in
            guard let u = careTeams.readableUser(request) else { return .apiError(.notFound, "no such user") }
            let week = request.query("week")
            if let week, ISOWeek(parsing: week) == nil { return .apiError(.badData, "week must look like 2026-W10") }
            return HistoryAPI.answer { () throws -> HTTPResponse in
                guard let r = try store.weeklyReport(of: u, week: week) else { return .apiError(.notFound, "no such weekly report") }
                return .apiSuccess(data: String(decoding: r.payload, as: UTF8.self))
            }
        }
        router.get("/api/v1/users/{u}/series", query: ["from", "to"]) { request in
            guard let u = careTeams.readableUser(request) else { return .apiError(.notFound, "no such user") }
            guard let range = HistoryAPI.range(request) else { return .apiError(.badData, HistoryAPI.rangeHelp) }
            return HistoryAPI.answer { () throws -> HTTPResponse in
                let h = try store.history(of: u, from: range.from, through: range.to)
                guard !h.series.isEmpty else { return .apiError(.notFound, "no recorded series for this user in the range") }
                return .apiSuccess(data: HistoryAPI.seriesJSON(h))
            }
        }
        router.get("/api/v1/users/{u}/alerts", query: ["from", "to"]) { request in
            guard let u = careTeams.readableUser(request) else { return .apiError(.notFound, "no such user") }
            guard let range = HistoryAPI.range(request) else { return .apiError(.badData, HistoryAPI.rangeHelp) }
            return HistoryAPI.answer { () throws -> HTTPResponse in
                let h = try store.history(of: u, from: range.from, through: range.to)
                guard !h.series.isEmpty || !h.alerts.isEmpty else { return .apiError(.notFound, "no history for this user in the range") }
                return .apiSuccess(data: HistoryAPI.alertsJSON(h))
            }
        }
    }
}

extension CareTeams {
    /// The `{u}` of a request, if its token may read that user: any user for a token without
    /// `teams=` in the tokens file, else only a user of one of those teams (today's teams: the
    /// `--care-teams` file's, else the profile's).
    func readableUser(_ request: HTTPRequest) -> String? {
        guard let u = request.parameter("u") else { return nil }
        guard let scope = request.teams else { return u }
        return teams(of: u).contains(where: scope.contains) ? u : nil
    }
}
