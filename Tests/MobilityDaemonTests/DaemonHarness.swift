import Foundation
import Glibc
import MobilityModel
import TestSupport

/// A `mobilityd` child process against a test broker, with its metrics port.
final class DaemonUnderTest: @unchecked Sendable {
    let process: ChildProcess
    let metricsPort: Int
    let broker: MosquittoBroker
    /// The daemon's `--state` directory.
    let statePath: String

    /// - Parameters:
    ///   - umask: started through `/bin/sh`, which sets this umask and `exec`s mobilityd (same pid).
    ///   - watchdogPID: with `umask`'s shell, sets `WATCHDOG_PID` to the daemon's own pid, as systemd does.
    init(
        broker: MosquittoBroker, rules: String = RepoPaths.rules, clock: String = "event", clientID: String = "mobilityd-test",
        state: String? = nil, extra: [String] = [], environment: [String: String] = [:], umask: String? = nil,
        watchdogPID: Bool = false
    ) throws {
        self.broker = broker
        metricsPort = try freePort()
        let state = state ?? TemporaryPath.make("mw-state")
        statePath = state
        let arguments =
            [
                "--broker", broker.url, "--rules", rules, "--state", state, "--clock", clock, "--client-id", clientID,
                "--metrics-address", "127.0.0.1:\(metricsPort)", "--log-level", "debug"
            ] + extra
        if umask != nil || watchdogPID {
            let script = "umask \(umask ?? "022") && " + (watchdogPID ? "WATCHDOG_PID=$$ " : "") + "exec \"$0\" \"$@\""
            process = try ChildProcess("/bin/sh", ["-c", script, ChildProcess.product("mobilityd")] + arguments, environment: environment)
        } else {
            process = try ChildProcess(ChildProcess.product("mobilityd"), arguments, environment: environment)
        }
        guard
            eventually(
                timeout: 15,
                {
                    self.metric("mobilityd_broker_connected{role=\"subscriber\"}") == 1
                        && self.metric("mobilityd_broker_connected{role=\"publisher\"}") == 1
                        && self.metric("mobilityd_broker_subscribed") == 1
                })
        else {
            throw HarnessError("mobilityd did not connect and subscribe:\n\(process.log)")
        }
    }

    /// All metrics (syntax checked).
    func metrics() -> [String: Double] {
        guard let r = httpGet(port: metricsPort, path: "/metrics"), r.status == 200 else { return [:] }
        return (try? parsePrometheus(r.body)) ?? [:]
    }

    func metric(_ key: String) -> Double? { metrics()[key] }

    /// Waits until the daemon is idle: no message queued or in a shard's hands, no output waiting
    /// for a commit, every output acknowledged by the broker. Followed by a recorder's ``MQTTRecorder/barrier(timeout:)``,
    /// everything the daemon published has then arrived.
    func waitIdle(timeout: TimeInterval = 20) -> Bool {
        eventually(timeout: timeout) {
            let m = metrics()
            return m["mobilityd_outputs_unacknowledged"] == 0 && m["mobilityd_outputs_uncommitted"] == 0 && m["mobilityd_weekly_reports_due"] == 0
                && m.filter { $0.key.hasPrefix("mobilityd_queue_depth") || $0.key.hasPrefix("mobilityd_shard_busy_seconds") }.values.allSatisfy { $0 == 0 }
        }
    }

    /// Waits until the daemon has taken `n` messages and its queues are empty.
    func waitProcessed(_ n: Int, timeout: TimeInterval = 20) -> Bool {
        eventually(timeout: timeout) {
            let m = metrics()
            return m["mobilityd_messages_received_total"] == Double(n)
                && m.filter { $0.key.hasPrefix("mobilityd_queue_depth") }.values.allSatisfy { $0 == 0 }
        }
    }
}

/// A sample payload.
func sampleJSON(
    id: String, type: String = "walkingSpeed", value: Double, unit: String = "m/s", end: String,
    bundle: String = "com.apple.health.test", metadata: String? = nil
) -> String {
    var s =
        "{\"id\":\"\(id)\",\"type\":\"\(type)\",\"value\":\(value),\"unit\":\"\(unit)\",\"start\":\"\(end)\",\"end\":\"\(end)\",\"source\":{\"bundleId\":\"\(bundle)\"}"
    if let metadata { s += ",\"metadata\":\(metadata)" }
    return s + "}"
}

/// Topic helpers under the default root.
func samplesTopic(_ user: String) -> String { "mobility/v1/users/\(user)/samples" }
func alertTopic(_ user: String, _ rule: String) -> String { "mobility/v1/users/\(user)/alerts/\(rule)" }

/// Now as an RFC 3339 string, shifted by days.
func isoNow(days: Double = 0) -> String {
    Timestamp(milliseconds: Int64((Date().timeIntervalSince1970 + days * 86_400) * 1000)).description
}
