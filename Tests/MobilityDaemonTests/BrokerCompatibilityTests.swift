import Foundation
import Glibc
import TestSupport
import Testing

/// mobilityd against a broker that speaks only MQTT 3.1.1 (NATS 2.9's MQTT listener, from Debian).
@Suite(.serialized) struct BrokerCompatibilityTests {
    /// A NATS server with JetStream and an MQTT listener on loopback.
    final class NATSServer {
        let mqttPort: Int
        let dir: String
        let process: ChildProcess
        init() throws {
            mqttPort = try freePort()
            let clientPort = try freePort()
            dir = TemporaryPath.make("mw-nats")
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try """
            server_name: mw-test
            listen: 127.0.0.1:\(clientPort)
            jetstream { store_dir: "\(dir)/js" }
            mqtt { listen: 127.0.0.1:\(mqttPort) }
            """.write(toFile: dir + "/nats.conf", atomically: true, encoding: .utf8)
            process = try ChildProcess("/usr/sbin/nats-server", ["-c", dir + "/nats.conf"])
            guard eventually(timeout: 15, { canConnect(port: self.mqttPort) }) else { throw HarnessError("nats-server did not start: \(process.log)") }
        }
        deinit {
            process.stop()
            try? FileManager.default.removeItem(atPath: dir)
        }
    }

    /// A protocol version the broker refuses is fatal with a clear message (exit 1), as refused
    /// credentials are; before, mobilityd tried twice, then never again, and stayed up unhealthy.
    @Test func aRefusedProtocolVersionIsFatalWithAHint() throws {
        let nats = try NATSServer()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let v5 = try ChildProcess(
            ChildProcess.product("mobilityd"),
            [
                "--broker", "mqtt://127.0.0.1:\(nats.mqttPort)", "--mqtt-version", "5", "--rules", RepoPaths.rules,
                "--state", state, "--clock", "event", "--metrics-address", "off"
            ])
        #expect(v5.wait(timeout: 20) == 1, "\(v5.log)")
        #expect(v5.log.contains("broker refused the connection; giving up") && v5.log.contains("use MQTT 3.1.1"), "\(v5.log)")
        // The same broker with MQTT 3.1.1 is fine.
        let metrics = try freePort()
        let v311 = try ChildProcess(
            ChildProcess.product("mobilityd"),
            [
                "--broker", "mqtt://127.0.0.1:\(nats.mqttPort)", "--mqtt-version", "3.1.1", "--rules", RepoPaths.rules,
                "--state", state, "--clock", "event", "--metrics-address", "127.0.0.1:\(metrics)"
            ])
        #expect(eventually(timeout: 20) { httpGet(port: metrics, path: "/healthz")?.status == 200 }, "\(v311.log)")
        #expect(v311.stop() == 0)
    }
}

/// A stock mosquitto drops what overflows an offline session's queue (1000 messages) while it
/// acknowledges every publish: mobilityd surfaces the broker's own drop counter.
@Suite(.serialized) struct BrokerDropTests {
    @Test func theBrokersDropCounterIsAMetricAndAWarning() throws {
        let broker = try MosquittoBroker(stockQueueLimits: true, sysInterval: 1)
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        var daemon = try DaemonUnderTest(broker: broker, state: state)
        #expect(eventually { daemon.metric("mobilityd_broker_messages_dropped") == 0 })
        #expect(daemon.process.stop() == 0)
        // 1500 samples while the daemon is away: the session keeps 1000.
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for i in 0..<1499 { try pub.publish(samplesTopic("u\(i % 10)"), sampleJSON(id: "s\(i)", value: 1.2, end: "2026-03-01T10:00:00Z")) }
        // The last one's acknowledgement follows the others' (one connection, in order).
        #expect(try pub.publishAwaitingAnswer(samplesTopic("u9"), sampleJSON(id: "s1499", value: 1.2, end: "2026-03-01T10:00:00Z"), timeout: 20) == 0)
        daemon = try DaemonUnderTest(broker: broker, state: state)
        // At least the 500 samples (its own $SYS updates queued for the offline session count too).
        #expect(eventually(timeout: 15) { (daemon.metric("mobilityd_broker_messages_dropped") ?? 0) >= 500 }, "\(daemon.metrics())")
        #expect(daemon.waitProcessed(1000))
        #expect(eventually { daemon.process.log.contains("the broker dropped messages") })
        #expect(daemon.process.stop() == 0)
    }
}
