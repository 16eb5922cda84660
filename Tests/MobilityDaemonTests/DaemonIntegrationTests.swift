import Foundation
import Glibc
import MobilityModel
import TestSupport
import Testing

/// mobilityd against a real mosquitto on a free loopback port.
@Suite(.serialized) struct DaemonIntegrationTests {
    @Test func alertFiresRetainedThenResolvesAndClearsRetained() throws {
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker)
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#"])
        let topic = alertTopic("jamie", "uncalibrated_6mwd")
        try rec.publish(samplesTopic("jamie"), sampleJSON(id: "w1", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: "2026-03-01T10:00:00Z"))
        #expect(eventually { rec.messages(prefix: topic).count == 1 })
        let firing = try JSONValue.parse(rec.messages(prefix: topic)[0].payload).get()
        #expect(firing["status"] == .string("firing"))
        // A dashboard that connects later sees the active alert (retained).
        let late = try MQTTRecorder(url: broker.url, filters: [topic])
        #expect(eventually { late.messages().count == 1 })
        #expect(late.messages().first?.payload == rec.messages(prefix: topic)[0].payload)
        // A calibrated estimate below the cap resolves it: resolved transition, then the retained state is cleared.
        try rec.publish(
            samplesTopic("jamie"),
            sampleJSON(
                id: "w2", type: "sixMinuteWalkTestDistance", value: 420, unit: "m",
                end: "2026-03-08T10:00:00Z", metadata: "{\"HKMetadataKeyAppleDeviceCalibrated\":\"1\"}"))
        #expect(eventually { rec.messages(prefix: topic).count == 3 })
        let msgs = rec.messages(prefix: topic)
        let resolved = try JSONValue.parse(msgs[1].payload).get()
        #expect(resolved["status"] == .string("resolved"))
        #expect(resolved["id"] == firing["id"])  // same alert, same id
        #expect(msgs[2].payload.isEmpty)  // the retained message cleared
        let later = try MQTTRecorder(url: broker.url, filters: [topic])
        #expect(try later.barrier())  // a retained message would have come before it
        #expect(later.messages().isEmpty)
        let m = daemon.metrics()
        #expect(m["mobilityd_alert_transitions_total{rule=\"uncalibrated_6mwd\",status=\"firing\"}"] == 1)
        #expect(m["mobilityd_alert_transitions_total{rule=\"uncalibrated_6mwd\",status=\"resolved\"}"] == 1)
        #expect(m["mobilityd_alerts_firing{rule=\"uncalibrated_6mwd\"}"] == 0)
        #expect(daemon.process.stop() == 0)
    }

    @Test func everyRejectionReasonIsPublishedAndCounted() throws {
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, clock: "wall", extra: ["--max-payload", "2048"])
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/rejected", "mobility/v1/rejected"])
        let now = isoNow()
        let cases: [(String, String, RejectionReason)] = [
            (samplesTopic("u1"), "{not json", .notJSON),
            (samplesTopic("u1"), "", .notJSON),
            (samplesTopic("u1"), "[" + String(repeating: "1,", count: 1500) + "1]", .payloadTooLarge),
            (samplesTopic("u1"), "{\"id\":\"a\",\"type\":\"walkingSpeed\",\"unit\":\"m/s\",\"start\":\"\(now)\",\"end\":\"\(now)\"}", .missingField),
            (samplesTopic("u1"), sampleJSON(id: "b", value: 1, end: "yesterday"), .invalidField),
            (samplesTopic("u1"), sampleJSON(id: "c", type: "heartRate", value: 1, end: now), .unknownType),
            (samplesTopic("u1"), sampleJSON(id: "d", value: 1, unit: "furlong/fortnight", end: now), .unknownUnit),
            (samplesTopic("u1"), sampleJSON(id: "e", value: 1, unit: "%", end: now), .unitMismatch),
            (
                samplesTopic("u1"), "{\"id\":\"f\",\"type\":\"walkingSpeed\",\"value\":\"NaN\",\"unit\":\"m/s\",\"start\":\"\(now)\",\"end\":\"\(now)\"}",
                .notFinite
            ),
            (samplesTopic("u1"), sampleJSON(id: "g", value: 40, end: now), .outOfRange),
            (
                samplesTopic("u1"),
                "{\"id\":\"h\",\"type\":\"walkingSpeed\",\"value\":1,\"unit\":\"m/s\",\"start\":\"\(isoNow(days: 0.01))\",\"end\":\"\(now)\"}", .endBeforeStart
            ),
            (samplesTopic("u1"), sampleJSON(id: "i", value: 1, end: "2100-01-01T00:00:00Z"), .inFuture),
            (samplesTopic("u1"), sampleJSON(id: "j", value: 1, end: "1970-01-01T00:00:00Z"), .tooLate),
            (samplesTopic("u1"), "{\"user\":\"u2\"," + sampleJSON(id: "k", value: 1, end: now).dropFirst(), .userMismatch),
            ("mobility/v1/users/bad user!/samples", sampleJSON(id: "l", value: 1, end: now), .invalidUser),
            (samplesTopic("u1"), "{\"timeZone\":\"Mars/Base\"," + sampleJSON(id: "m", value: 1, end: now).dropFirst(), .invalidTimeZone)
        ]
        for (topic, payload, _) in cases { try rec.publish(topic, payload) }
        // One bad sample in a batch rejects that sample only.
        try rec.publish(
            samplesTopic("u1"),
            "[" + sampleJSON(id: "ok1", value: 1.1, end: now) + "," + sampleJSON(id: "bad", value: -1, end: now)
                + "," + sampleJSON(id: "ok2", value: 1.2, end: now) + "]")
        #expect(daemon.waitProcessed(cases.count + 1))
        #expect(eventually { rec.messages().count == cases.count + 1 })
        let reasons = rec.messages().compactMap { m -> String? in
            guard case .string(let r)? = try? JSONValue.parse(m.payload).get()["reason"] else { return nil }
            return r
        }
        for (_, _, reason) in cases { #expect(reasons.contains(reason.rawValue), "no rejection with reason \(reason.rawValue)") }
        #expect(rec.messages(prefix: "mobility/v1/rejected").count == 1)  // the invalid user has no user topic
        let m = daemon.metrics()
        #expect(m["mobilityd_samples_accepted_total"] == 2)
        #expect(m["mobilityd_rejected_total{reason=\"out_of_range\"}"] == 2)
        #expect(m["mobilityd_rejected_total{reason=\"not_json\"}"] == 2)
        #expect(m["mobilityd_rejected_total{reason=\"too_late\"}"] == 1)
        #expect(daemon.process.isRunning)  // bad input never stops the daemon
    }

    @Test func stockClientsDriveAndObserve() throws {
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker)
        let sub = try ChildProcess(
            "/usr/bin/stdbuf",
            [
                "-oL", "/usr/bin/mosquitto_sub", "-d", "-h", "127.0.0.1", "-p", String(broker.port), "-q", "1", "-C", "1", "-W", "10",
                "-t", alertTopic("pat", "uncalibrated_6mwd")
            ])
        #expect(eventually { sub.log.contains("received SUBACK") }, "\(sub.log)")  // -d, line-buffered: the subscription is live
        let pub = try ChildProcess(
            "/usr/bin/mosquitto_pub",
            [
                "-h", "127.0.0.1", "-p", String(broker.port), "-q", "1", "-t", samplesTopic("pat"),
                "-m",
                sampleJSON(
                    id: "p1", type: "sixMinuteWalkTestDistance", value: 380, unit: "m",
                    end: "2026-05-01T09:00:00+02:00", metadata: "{\"HKMetadataKeyAppleDeviceCalibrated\":0}")
            ])
        #expect(pub.wait() == 0)
        #expect(sub.wait() == 0)
        #expect(sub.log.contains("\"rule\":\"uncalibrated_6mwd\"") && sub.log.contains("\"status\":\"firing\""))
        _ = daemon
    }

    @Test func restartedDaemonReceivesWhatWasQueuedInItsSession() throws {
        let broker = try MosquittoBroker()
        var daemon: DaemonUnderTest? = try DaemonUnderTest(broker: broker, clientID: "mobilityd-restart")
        #expect(daemon!.process.stop() == 0)
        daemon = nil
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for i in 0..<300 { try pub.publish(samplesTopic("u\(i % 7)"), sampleJSON(id: "s\(i)", value: 1.1, end: "2026-04-01T12:00:00Z")) }
        #expect(eventually { pub.acknowledgedCount == 300 })  // the broker has queued them for the session
        daemon = try DaemonUnderTest(broker: broker, clientID: "mobilityd-restart")
        #expect(daemon!.waitProcessed(300))
        #expect(daemon!.metric("mobilityd_samples_accepted_total") == 300)
    }

    @Test func reconnectsAndResumesAfterBrokerRestart() throws {
        let broker = try MosquittoBroker(persistence: true)
        let daemon = try DaemonUnderTest(broker: broker, extra: ["--log-level", "info"])
        broker.stop()
        #expect(eventually { daemon.metric("mobilityd_broker_connected{role=\"subscriber\"}") == 0 })
        try broker.start()
        #expect(
            eventually(timeout: 20) {
                daemon.metric("mobilityd_broker_connected{role=\"subscriber\"}") == 1
                    && daemon.metric("mobilityd_broker_reconnects_total{role=\"subscriber\"}") == 1
            })
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#", "mobility/v1/daemon/#"])
        try rec.publish(samplesTopic("kim"), sampleJSON(id: "k1", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: "2026-02-01T08:00:00Z"))
        #expect(eventually { rec.messages(prefix: alertTopic("kim", "uncalibrated_6mwd")).count == 1 })
        #expect(rec.messages(prefix: "mobility/v1/daemon/").last?.text == "online")  // re-announced after the reconnect
        // The broker saved the daemon's session and resumed it (CONNACK's session present).
        #expect(daemon.metric("mobilityd_broker_sessions_lost_total") == 0)
        #expect(!daemon.process.log.contains("kept no session"))
    }

    /// A broker without persistence forgets the daemon's session when it restarts, and with it
    /// whatever it had queued: the reconnect says so (CONNACK without a session), the daemon logs
    /// it and counts it, so that an operator learns inputs may be lost instead of guessing.
    @Test func aReconnectWithoutItsSessionIsReported() throws {
        let broker = try MosquittoBroker(persistence: false)
        let daemon = try DaemonUnderTest(broker: broker, extra: ["--log-level", "info"])
        #expect(daemon.metric("mobilityd_broker_sessions_lost_total") == 0)
        broker.stop()
        #expect(eventually { daemon.metric("mobilityd_broker_connected{role=\"subscriber\"}") == 0 })
        try broker.start()
        #expect(eventually(timeout: 20) { daemon.metric("mobilityd_broker_sessions_lost_total") == 1 }, "\(daemon.process.log)")
        #expect(eventually { daemon.process.log.contains("kept no session") && daemon.process.log.contains("role=subscriber") })
        // The publisher's session is clean by design: its reconnect is not a loss.
        #expect(daemon.process.log.split(separator: "\n").filter { $0.contains("kept no session") }.count == 1, "\(daemon.process.log)")
    }

    @Test func sighupWithABrokenRuleKeepsTheOldRules() throws {
        let dir = TemporaryPath.make("mw-rules")
        try FileManager.default.copyItem(atPath: RepoPaths.rules, toPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, rules: dir)
        try "alert broken {\n  when speed_7d < 25 %\n}\n".write(toFile: dir + "/broken.rules", atomically: true, encoding: .utf8)
        daemon.process.signal(SIGHUP)
        #expect(eventually { daemon.metric("mobilityd_rule_reloads_total{result=\"failure\"}") == 1 })
        #expect(daemon.process.log.contains("broken.rules:2:"))
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#"])
        try rec.publish(samplesTopic("lee"), sampleJSON(id: "l1", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: "2026-02-01T08:00:00Z"))
        #expect(eventually { rec.messages(prefix: alertTopic("lee", "uncalibrated_6mwd")).count == 1 })  // old rules still run
        // A valid new rule is loaded on the next SIGHUP.
        try "alert slow_walk {\n  when speed_7d < 0.5 m/s\n}\n".write(toFile: dir + "/broken.rules", atomically: true, encoding: .utf8)
        daemon.process.signal(SIGHUP)
        #expect(eventually { daemon.metric("mobilityd_rule_reloads_total{result=\"success\"}") == 1 })
    }

    /// A rule file that overflowed the checker's stack killed the daemon on
    /// SIGHUP (no log line) and made it crash-loop at start.
    @Test func hostileRuleFilesAreRefusedOnSighupAndAtStart() throws {
        let dir = TemporaryPath.make("mw-rules")
        try FileManager.default.copyItem(atPath: RepoPaths.rules, toPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, rules: dir)
        let nots = "alert hostile {\n  when " + String(repeating: "not ", count: 100_000) + "true\n}\n"
        try nots.write(toFile: dir + "/hostile.rules", atomically: true, encoding: .utf8)
        daemon.process.signal(SIGHUP)
        #expect(eventually { daemon.metric("mobilityd_rule_reloads_total{result=\"failure\"}") == 1 })
        #expect(daemon.process.isRunning)
        #expect(daemon.process.log.contains("hostile.rules:2:"))
        #expect(daemon.process.log.contains("nesting-too-deep"))
        var chain = "series c0 = mean(walkingSpeed)\n"
        for i in 1...20 { chain += "series c\(i) = mean(c\(i - 1), 365 d)\n" }
        try chain.write(toFile: dir + "/hostile.rules", atomically: true, encoding: .utf8)
        daemon.process.signal(SIGHUP)
        #expect(eventually { daemon.metric("mobilityd_rule_reloads_total{result=\"failure\"}") == 2 })
        #expect(daemon.process.log.contains("rule-too-costly"))
        // The old rules still run.
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#"])
        try rec.publish(samplesTopic("lee"), sampleJSON(id: "l1", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: "2026-02-01T08:00:00Z"))
        #expect(eventually { rec.messages(prefix: alertTopic("lee", "uncalibrated_6mwd")).count == 1 })
        // At start: exit 1 with the diagnostics logged, no crash.
        try nots.write(toFile: dir + "/hostile.rules", atomically: true, encoding: .utf8)
        let start = try ChildProcess(
            ChildProcess.product("mobilityd"),
            [
                "--broker", broker.url, "--rules", dir, "--state", TemporaryPath.make("mw-state"),
                "--metrics-address", "127.0.0.1:\(try freePort())"
            ])
        #expect(start.wait() == 1)
        #expect(start.log.contains("nesting-too-deep"))
        #expect(start.log.contains("rules are invalid; not starting"))
    }

    @Test func reloadThatRemovesARuleDropsItsFiringGauge() throws {
        // A long commit interval: the reload's batch publishes nothing and is not committed, and
        // its bookkeeping (the firing gauge of a removed rule) must happen all the same.
        let dir = TemporaryPath.make("mw-rules")
        try FileManager.default.copyItem(atPath: RepoPaths.rules, toPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, rules: dir, extra: ["--commit-interval", "60000"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        try pub.publish(samplesTopic("lee"), sampleJSON(id: "l1", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: "2026-02-01T08:00:00Z"))
        #expect(eventually { daemon.metric("mobilityd_alerts_firing{rule=\"uncalibrated_6mwd\"}") == 1 })
        try FileManager.default.removeItem(atPath: dir + "/six_minute_walk.rules")
        // report.rules names the six-minute-walk series and rule: the set would not check without them
        try FileManager.default.removeItem(atPath: dir + "/report.rules")
        daemon.process.signal(SIGHUP)
        #expect(eventually { daemon.metric("mobilityd_rule_reloads_total{result=\"success\"}") == 1 })
        #expect(eventually { daemon.metric("mobilityd_alerts_firing{rule=\"uncalibrated_6mwd\"}") == nil })
    }

    @Test func sigtermDrainsPublishesOfflineAndExitsZero() throws {
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker)
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for i in 0..<200 { try pub.publish(samplesTopic("z\(i % 5)"), sampleJSON(id: "z\(i)", value: 1.0, end: "2026-04-01T12:00:00Z")) }
        #expect(daemon.waitProcessed(200))
        #expect(daemon.process.stop() == 0)
        #expect(daemon.process.log.contains("msg=stopped exit_code=0"))
        let status = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/daemon/+/status"])
        #expect(eventually { status.messages().last?.text == "offline" })
        #expect(httpGet(port: daemon.metricsPort, path: "/metrics") == nil)
    }

    @Test func healthzAndMetricsEndpoints() throws {
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker)
        #expect(httpGet(port: daemon.metricsPort, path: "/healthz")?.status == 200)
        #expect(httpGet(port: daemon.metricsPort, path: "/nope")?.status == 404)
        let body = try #require(httpGet(port: daemon.metricsPort, path: "/metrics")).body
        let m = try parsePrometheus(body)
        #expect(m["mobilityd_users"] == 0)
        #expect(body.contains("# TYPE mobilityd_rejected_total counter"))
        broker.stop()
        #expect(eventually { httpGet(port: daemon.metricsPort, path: "/healthz")?.status == 503 })
    }

    @Test func invalidRulesRefuseToStart() throws {
        let dir = TemporaryPath.make("mw-badrules")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "alert a { when 1 m/s > 25 % }\n".write(toFile: dir + "/a.rules", atomically: true, encoding: .utf8)
        let p = try ChildProcess(ChildProcess.product("mobilityd"), ["--rules", dir, "--check-config"])
        #expect(p.wait() == 1)
        #expect(p.log.contains("unit-mismatch"))
        let ok = try ChildProcess(ChildProcess.product("mobilityd"), ["--rules", RepoPaths.rules, "--check-config"])
        #expect(ok.wait() == 0)
        let usage = try ChildProcess(ChildProcess.product("mobilityd"), ["--clock", "sundial"])
        #expect(usage.wait() == 2)
    }
}

/// Hostile payloads and topics: each rejected with the right reason, the daemon still serving,
/// state unchanged (no user created, nothing accepted).
@Suite(.serialized) struct HostileInputTests {
    @Test func hostileInputIsRejectedAndChangesNothing() throws {
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, clock: "wall")
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/rejected", "mobility/v1/rejected"])
        let now = isoNow()
        let good = sampleJSON(id: "g", value: 1.2, end: now)
        let cases: [(String, [UInt8], RejectionReason)] = [
            ("truncated JSON", Array(good.dropLast(7).utf8), .notJSON),
            ("deep nesting", Array((String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)).utf8), .payloadTooLarge),
            ("deep nesting, small", Array((String(repeating: "[", count: 100) + String(repeating: "]", count: 100)).utf8), .notJSON),
            ("huge string", Array("{\"id\":\"\(String(repeating: "x", count: 300_000))\"}".utf8), .payloadTooLarge),
            ("long id", Array(sampleJSON(id: String(repeating: "i", count: 200), value: 1, end: now).utf8), .invalidField),
            ("NaN literal", Array(good.replacingOccurrences(of: "\"value\":1.2", with: "\"value\":NaN").utf8), .notJSON),
            ("Infinity string", Array(good.replacingOccurrences(of: "\"value\":1.2", with: "\"value\":\"Infinity\"").utf8), .notFinite),
            ("huge number", Array(good.replacingOccurrences(of: "\"value\":1.2", with: "\"value\":1e400").utf8), .notFinite),
            ("negative", Array(good.replacingOccurrences(of: "\"value\":1.2", with: "\"value\":-3").utf8), .outOfRange),
            ("absurd", Array(good.replacingOccurrences(of: "\"value\":1.2", with: "\"value\":3e8").utf8), .outOfRange),
            ("1970", Array(sampleJSON(id: "old", value: 1, end: "1970-01-01T00:00:00Z").utf8), .tooLate),
            ("far future", Array(sampleJSON(id: "fut", value: 1, end: "9999-12-31T23:59:59Z").utf8), .inFuture),
            ("invalid UTF-8", Array(good.utf8.prefix(10)) + [0xC3, 0x28] + Array(good.utf8.dropFirst(10)), .notJSON),
            ("empty", [], .notJSON),
            ("metadata object", Array(sampleJSON(id: "m", value: 1, end: now, metadata: "{\"HKWasUserEntered\":{\"a\":1}}").utf8), .invalidField),
            ("array of junk", Array("[1, \"x\", null]".utf8), .invalidField),
            ("wrong unit", Array(sampleJSON(id: "u", value: 1, unit: "m", end: now).utf8), .unitMismatch)
        ]
        for (_, payload, _) in cases { try rec.client_publish(samplesTopic("h1"), payload) }
        try rec.publish("mobility/v1/users/jäm!e/samples", good)  // outside the topic-safe alphabet
        try rec.publish("mobility/v1/users/\(String(repeating: "u", count: 80))/samples", good)
        #expect(daemon.waitProcessed(cases.count + 2))
        let m = daemon.metrics()
        #expect(m["mobilityd_samples_accepted_total"] == 0)
        #expect(m["mobilityd_users"] == 0)  // nothing created state
        let reasons = rec.messages().compactMap { msg -> String? in
            guard case .string(let r)? = try? JSONValue.parse(msg.payload).get()["reason"] else { return nil }
            return r
        }
        for (name, _, reason) in cases { #expect(reasons.contains(reason.rawValue), "\(name): no \(reason.rawValue) rejection") }
        #expect(reasons.filter { $0 == "invalid_user" }.count == 2)
        // Still serving.
        try rec.publish(samplesTopic("h1"), good)
        #expect(eventually { daemon.metric("mobilityd_samples_accepted_total") == 1 })
        #expect(daemon.process.isRunning)
    }
}

extension MQTTRecorder {
    func client_publish(_ topic: String, _ payload: [UInt8]) throws { try publishBytes(topic, payload) }
}

/// mqtts:// with a private CA, username/password, MQTT 5; refused credentials are fatal.
@Suite(.serialized) struct SecureConnectionTests {
    func run(_ tool: String, _ args: [String]) throws {
        let p = try ChildProcess(tool, args)
        try #require(p.wait() == 0, "\(tool) \(args.joined(separator: " ")): \(p.log)")
    }

    @Test func tlsWithPasswordAndMQTT5() throws {
        let dir = TemporaryPath.make("mw-tls")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try ShippedDeployment.mintCertificates(dir)
        try run("/usr/bin/mosquitto_passwd", ["-c", "-b", dir + "/passwd", "mobilityd", "s3cret"])
        let port = try freePort()
        let conf = """
            per_listener_settings false
            allow_anonymous false
            password_file \(dir)/passwd
            listener \(port) 127.0.0.1
            certfile \(dir)/server.crt
            keyfile \(dir)/server.key
            cafile \(dir)/ca.crt
            \(getuid() == 0 ? "user root" : "")
            """
        try conf.write(toFile: dir + "/m.conf", atomically: true, encoding: .utf8)
        let broker = try ChildProcess("/usr/sbin/mosquitto", ["-c", dir + "/m.conf"])
        defer { broker.stop() }
        #expect(eventually { canConnect(port: port) })
        let metrics = try freePort()
        let daemon = try ChildProcess(
            ChildProcess.product("mobilityd"),
            [
                "--broker", "mqtts://127.0.0.1:\(port)", "--ca-file", dir + "/ca.crt", "--username", "mobilityd", "--mqtt-version", "5",
                "--broker-binds-client-ids", "false",
                "--rules", RepoPaths.rules, "--state", dir + "/state", "--clock", "event", "--metrics-address", "127.0.0.1:\(metrics)"
            ], environment: ["MOBILITYD_PASSWORD": "s3cret"])
        #expect(eventually(timeout: 15) { httpGet(port: metrics, path: "/healthz")?.status == 200 }, "\(daemon.log)")
        #expect(daemon.log.contains("role=subscriber") && !daemon.log.contains("refused"))
        #expect(daemon.stop() == 0)
        // Wrong password: the broker refuses; retrying cannot help, so mobilityd exits 1.
        let wrong = try ChildProcess(
            ChildProcess.product("mobilityd"),
            [
                "--broker", "mqtts://127.0.0.1:\(port)", "--ca-file", dir + "/ca.crt", "--username", "mobilityd",
                "--broker-binds-client-ids", "false", "--rules", RepoPaths.rules, "--state", dir + "/state2", "--metrics-address", "off"
            ], environment: ["MOBILITYD_PASSWORD": "nope"])  // never on the command line (refused there)
        #expect(wrong.wait(timeout: 20) == 1, "\(wrong.log)")
        #expect(wrong.log.contains("refused"))
    }
}
