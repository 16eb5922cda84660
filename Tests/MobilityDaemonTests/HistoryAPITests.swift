import CareReports
import Foundation
import Glibc
import MobilityModel
import RuleLanguage
import Simulator
import StateStore
import TestSupport
import Testing

/// The care-team history over the report listener (`/api/v1/users/{u}/…`), from a live daemon
/// that took a recovery story: what the API answers equals what the daemon published on MQTT.
@Suite(.serialized) struct HistoryAPITests {
    /// A token limited to care teams (`teams=` in the tokens file) reads the users of its teams
    /// only: another team's user is 404 on every user route, as a user without history is; an
    /// unlimited token reads both.
    @Test func aTeamTokenReadsOnlyItsTeamsUsers() throws {
        let dir = try ReportListenerTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let wardToken = String(repeating: "5a", count: 20)
        try "care-team:\(ReportListenerTests.token)\nward-a-staff:\(wardToken) teams=ward-a\n".write(
            toFile: dir + "/tokens", atomically: true, encoding: .utf8)
        chmod(dir + "/tokens", 0o600)
        try "jamie-plateau ward-a\njamie-normal ward-b\n".write(toFile: dir + "/teams", atomically: true, encoding: .utf8)
        chmod(dir + "/teams", 0o600)
        let broker = try MosquittoBroker()
        let port = try freePort()
        let daemon = try DaemonUnderTest(
            broker: broker, extra: ["--http-address", "127.0.0.1:\(port)", "--http-tokens", dir + "/tokens", "--care-teams", dir + "/teams"])
        defer { daemon.process.stop() }
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        var count = 0
        for story in [BuiltinScenario.jamiePlateau, .jamieNormal] {
            let records = story.generator(seed: 6).generate().map(\.record).prefix(400)
            for r in records { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
            count += records.count
        }
        #expect(daemon.waitProcessed(count, timeout: 60))
        #expect(daemon.waitIdle())
        func status(_ path: String, _ token: String) throws -> Int {
            try Curl.get("http://127.0.0.1:\(port)\(path)", headers: ["Authorization: Bearer \(token)"]).status
        }
        for path in ["/api/v1/users/{u}/series", "/api/v1/users/{u}/alerts", "/users/{u}/panel"] {
            let mine = path.replacingOccurrences(of: "{u}", with: "jamie-plateau")
            let theirs = path.replacingOccurrences(of: "{u}", with: "jamie-normal")
            #expect(try status(mine, wardToken) == 200, "\(mine)")
            #expect(try status(theirs, wardToken) == 404, "\(theirs)")
            #expect(try status(theirs, ReportListenerTests.token) == 200, "\(theirs)")
        }
        #expect(try status("/api/v1/users/jamie-normal/reports", wardToken) == 404)
        #expect(try status("/users/jamie-normal/report", wardToken) == 404)
    }

    @Test func theHistoryAPIAnswersWhatTheDaemonPublished() throws {
        let dir = try ReportListenerTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let story = BuiltinScenario.jamiePlateau, user = story.rawValue
        let records = story.generator(seed: 6).generate().map(\.record)
        let broker = try MosquittoBroker()
        let port = try freePort()
        let daemon = try DaemonUnderTest(broker: broker, extra: ["--http-address", "127.0.0.1:\(port)", "--http-tokens", dir + "/tokens"])
        defer { daemon.process.stop() }
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/series/#", "mobility/v1/users/+/reports/#", "mobility/v1/users/+/alerts/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for r in records { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon.waitProcessed(records.count, timeout: 60))
        #expect(daemon.waitIdle())
        #expect(try rec.barrier())

        let auth = ["Authorization: Bearer \(ReportListenerTests.token)"]
        func api(_ path: String) throws -> (status: Int, data: JSONValue?) {
            let r = try Curl.get("http://127.0.0.1:\(port)/api/v1/users/\(path)", headers: auth)
            guard case .success(let v) = JSONValue.parse(Array(r.body.utf8)) else { return (r.status, nil) }
            return (r.status, v["data"] ?? v)
        }
        // Weeks: as many as were published, newest first.
        let published = rec.messages(prefix: "mobility/v1/users/\(user)/reports/weekly").compactMap { try? WeeklyDigest.decode($0.payload).get() }
        #expect(published.count >= 12)
        let weeks = try api("\(user)/reports")
        #expect(weeks.status == 200)
        #expect(weeks.data?["weeks"] == .array(published.map { .string($0.week.description) }.reversed()))
        // The latest weekly report is the last one published; an earlier week by name.
        let latest = try api("\(user)/reports/weekly")
        #expect(latest.status == 200)
        #expect(latest.data.flatMap { try? WeeklyDigest.decode(Array($0.text.utf8)).get() } == published.last)
        let second = try api("\(user)/reports/weekly?week=\(published[1].week)")
        #expect(second.data.flatMap { try? WeeklyDigest.decode(Array($0.text.utf8)).get() } == published[1])
        #expect(try api("\(user)/reports/weekly?week=2026-W99").status == 400)
        #expect(try api("\(user)/reports/weekly?week=1999-W10").status == 404)
        #expect(try api("nobody/reports").status == 404)
        #expect(try api("nobody/series").status == 404)

        // Series: every published point of speed_p95 in March, in the series' unit.
        var march: [String: Double?] = [:]
        for m in rec.messages(prefix: "mobility/v1/users/\(user)/series") {
            guard let day = DailySeries.parse(m.payload), day.day.description.hasPrefix("2026-03-"),
                let p = day.values.first(where: { $0.name == "speed_p95" })
            else { continue }
            march[day.day.description] = .some(p.value)
        }
        #expect(march.count >= 28)  // the story's last day is still open
        let series = try api("\(user)/series?from=2026-03-01&to=2026-03-31")
        #expect(series.status == 200)
        guard case .array(let points)? = series.data?["series"]?["speed_p95"]?["points"] else {
            Issue.record("no points: \(String(describing: series.data))"); return
        }
        #expect(points.count == march.count)
        for p in points {
            guard case .string(let d)? = p["day"] else { Issue.record("a point without a day"); continue }
            switch (p["value"], march[d]) {
            case (.number(let a)?, .some(.some(let b))): #expect(abs(a - b) <= 1e-6, "\(d)")
            case (.null?, .some(.none)): break
            default: Issue.record("\(d): \(String(describing: p["value"])) vs \(String(describing: march[d]))")
            }
        }
        #expect(try api("\(user)/series?from=2026-03-31&to=2026-03-01").status == 400)
        #expect(try api("\(user)/series?from=2026-3-1").status == 400)

        // Alerts: the stall the plateau fired, with its published id.
        let fired = Set(rec.messages(prefix: "mobility/v1/users/\(user)/alerts/").compactMap { AlertTransition.parse($0.payload)?.id })
        let alerts = try api("\(user)/alerts")
        guard case .array(let episodes)? = alerts.data?["alerts"] else { Issue.record("no alerts"); return }
        #expect(Set(episodes.compactMap { if case .string(let id)? = $0["id"] { id } else { nil } }) == fired)
        #expect(!fired.isEmpty)
        // The pages: exactly what the renderer draws from the store's history with the shipped
        // report block, as HTML with the security headers.
        let store = try StateStore(path: daemon.statePath + "/state.sqlite")
        let (program, _) = Checker.check(RuleSet.load([RepoPaths.rules]).sources)
        let spec = ReportSpec(try #require(program?.report))
        let panel = try Curl.get("http://127.0.0.1:\(port)/users/\(user)/panel", headers: auth)
        #expect(panel.status == 200 && panel.headers["content-type"]?.hasPrefix("text/html") == true)
        #expect(panel.headers["content-security-policy"]?.contains("default-src 'none'") == true)
        #expect(panel.body == ReportPage.panel(history: try store.history(of: user, from: .min, through: .max), spec: spec))
        let page = try Curl.get("http://127.0.0.1:\(port)/users/\(user)/report?week=\(published[1].week)", headers: auth)
        #expect(page.status == 200)
        let d = published[1]
        #expect(page.body == ReportPage.weekly(digest: d, history: try store.history(of: user, from: d.firstDay - 120, through: d.lastDay), spec: spec))
        #expect(page.body.contains("<svg") && page.body.contains(d.week.description))
        #expect(try Curl.get("http://127.0.0.1:\(port)/users/nobody/panel", headers: auth).status == 404)
        #expect(try Curl.get("http://127.0.0.1:\(port)/users/\(user)/report?week=W10", headers: auth).status == 400)
        if let out = ProcessInfo.processInfo.environment["RENDER_REPORTS_DIR"] {  // scripts/render-reports.sh looks at the served pages too
            try panel.body.write(toFile: out + "/served-panel.html", atomically: true, encoding: .utf8)
            try page.body.write(toFile: out + "/served-weekly.html", atomically: true, encoding: .utf8)
        }
        // mobilityctl report --state on the same state directory (the daemon running): the stored
        // digest, and the same panel as served (the rules from the store, as the daemon ran them).
        let ctl = try ChildProcess(ChildProcess.product("mobilityctl"), ["report", "--state", daemon.statePath, "--user", user, "-o", "-"])
        #expect(ctl.wait(timeout: 30) == 0, "\(ctl.log)")
        let json = ctl.log.split(separator: "\n").first { $0.hasPrefix("{") }.map(String.init) ?? ""
        #expect((try? WeeklyDigest.decode(Array(json.utf8)).get()) == published.last)
        let out = TemporaryPath.make("mw-panel", suffix: ".html")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let ctlPanel = try ChildProcess(
            ChildProcess.product("mobilityctl"), ["report", "--state", daemon.statePath, "--user", user, "--page", "panel", "-o", out])
        #expect(ctlPanel.wait(timeout: 30) == 0, "\(ctlPanel.log)")
        #expect(try String(contentsOfFile: out, encoding: .utf8) == panel.body)

        // Without a token: nothing.
        #expect(try Curl.get("http://127.0.0.1:\(port)/api/v1/users/\(user)/series").status == 401)
        #expect(try Curl.get("http://127.0.0.1:\(port)/users/\(user)/panel").status == 401)
    }
}
