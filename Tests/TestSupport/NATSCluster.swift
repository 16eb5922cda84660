import Foundation
import Glibc
import HTTPEndpoint

/// Real NATS servers (2.9, `/usr/sbin/nats-server`) for tests: one node, or a cluster of several
/// routed on loopback, each with JetStream and an MQTT listener (JetStream and a server name are
/// what the MQTT listener needs), `mqtt { stream_replicas: N }` so that MQTT sessions survive the
/// loss of a node, and the partition mapping of the four input kinds. Each node is stopped by its
/// PID on deinit.
package final class NATSCluster: @unchecked Sendable {
    /// Where Debian's package installs the server.
    package static let binary = "/usr/sbin/nats-server"
    /// One node's ports and process.
    package struct Node: Sendable {
        /// The client port, the MQTT port, the cluster (route) port and the monitoring (HTTP)
        /// port, on 127.0.0.1.
        package let clientPort: Int, mqttPort: Int, clusterPort: Int, monitorPort: Int
        /// `mqtt://127.0.0.1:MQTT_PORT`.
        package var url: String { "mqtt://127.0.0.1:\(mqttPort)" }
    }
    /// The nodes.
    package let nodes: [Node]
    /// The working directory (configs, JetStream stores, logs).
    package let directory: String
    private var processes: [ChildProcess?]
    private let lock = NSLock()

    /// The mapping of the four input kinds into `partitions` partitions by user (wildcard 1), as
    /// in docs/scaling.md: `mobility.v1.users.*.samples` → `part.{{partition(P,1)}}.…`. Only the
    /// inputs: a pattern `users.*.*` would move the daemon's own five-level outputs too.
    package static func mapping(partitions: Int, root: String = "mobility.v1") -> String {
        let kinds = ["samples", "events", "deletions", "profile"].map { k in
            "  \"\(root).users.*.\(k)\": \"part.{{partition(\(partitions),1)}}.\(root).users.{{wildcard(1)}}.\(k)\""
        }
        return "mappings = {\n" + kinds.joined(separator: "\n") + "\n}\n"
    }

    /// Starts `size` nodes (1: no cluster block) with the mapping into `partitions` partitions
    /// (nil: no mapping) and waits until each accepts MQTT connections.
    /// - Parameter maxAckPending: messages a session may have unacknowledged (1: a message taken
    ///   over from a dead consumer is redelivered before any later one, so a user's order holds).
    package init(size: Int = 3, partitions: Int?, maxAckPending: Int = 1) throws {
        guard FileManager.default.isExecutableFile(atPath: NATSCluster.binary) else {
            throw HarnessError("nats-server is not installed (\(NATSCluster.binary)): run scripts/install-deps.sh, which installs nats-server")
        }
        directory = TemporaryPath.make("mw-nats")
        // A name of its own: a route from another test's cluster (to a port this one now uses)
        // is refused instead of joining the two.
        let name = "mw-" + directory.suffix(8).filter { $0.isLetter || $0.isNumber }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var ns: [Node] = []
        for _ in 0..<size { ns.append(Node(clientPort: try freePort(), mqttPort: try freePort(), clusterPort: try freePort(), monitorPort: try freePort())) }
        nodes = ns
        processes = Array(repeating: nil, count: size)
        for (i, n) in ns.enumerated() {
            var conf = """
                server_name: n\(i)
                listen: 127.0.0.1:\(n.clientPort)
                http: 127.0.0.1:\(n.monitorPort)
                jetstream { store_dir: "\(directory)/js\(i)" }
                mqtt { listen: 127.0.0.1:\(n.mqttPort), stream_replicas: \(size), max_ack_pending: \(maxAckPending), ack_wait: "2s" }

                """
            if size > 1 {
                let routes = ns.enumerated().filter { $0.offset != i }.map { "nats-route://127.0.0.1:\($0.element.clusterPort)" }
                conf += "cluster { name: \(name), listen: 127.0.0.1:\(n.clusterPort), routes: [\(routes.joined(separator: ", "))] }\n"
            }
            if let partitions { conf += NATSCluster.mapping(partitions: partitions) }
            try conf.write(toFile: "\(directory)/n\(i).conf", atomically: true, encoding: .utf8)
        }
        for i in 0..<size { try start(i) }
        for i in 0..<size { try waitReady(i) }
        try waitServingMQTT()
    }

    /// Waits until every node serves MQTT sessions: in a cluster the listener is open before
    /// JetStream has a meta leader, and a CONNECT is only answered after.
    package func waitServingMQTT(timeout: TimeInterval = 60) throws {
        let deadline = Date().addingTimeInterval(timeout)
        for n in nodes {
            while true {
                if let r = try? MQTTRecorder(url: n.url, filters: ["mw-ready/+"]) {
                    r.stop()
                    break
                }
                guard Date() < deadline else { throw HarnessError("the NATS cluster did not serve MQTT within \(timeout) s; see \(directory)") }
            }
        }
    }

    /// Starts (or restarts) node `i`.
    package func start(_ i: Int) throws {
        let p = try ChildProcess(NATSCluster.binary, ["-c", "\(directory)/n\(i).conf"], logPath: "\(directory)/n\(i).log")
        lock.withLock { processes[i] = p }
    }

    /// Waits until node `i` takes MQTT connections (the MQTT listener opens once JetStream is up).
    package func waitReady(_ i: Int, timeout: TimeInterval = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if canConnect(port: nodes[i].mqttPort) { return }
            usleep(50_000)
        }
        throw HarnessError("nats-server n\(i) did not open its MQTT listener; see \(directory)/n\(i).log: \(log(i).suffix(2000))")
    }

    /// Node `i`'s view of the JetStream consumers it hosts (its `/jsz` monitoring endpoint), one
    /// line each: stream, consumer, whether this node leads it, messages delivered and not yet
    /// acknowledged, redelivered, not yet delivered, the last delivered and the acknowledged
    /// stream sequence, whether a client is bound. What tells a stalled consumer from a lost
    /// message after a failure; "(not answering)" for a node that is down.
    package func consumers(_ i: Int) -> String {
        guard let r = LoopbackHTTP.get(port: nodes[i].monitorPort, path: "/jsz?accounts=true&streams=true&consumers=true"), r.status == 200,
            let root = try? JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any]
        else { return "(not answering)" }
        var lines: [String] = []
        for account in root["account_details"] as? [[String: Any]] ?? [] {
            for stream in account["stream_detail"] as? [[String: Any]] ?? [] {
                for c in stream["consumer_detail"] as? [[String: Any]] ?? [] {
                    let cluster = c["cluster"] as? [String: Any]
                    let leads = (cluster?["leader"] as? String) == "n\(i)"
                    let delivered = (c["delivered"] as? [String: Any])?["stream_seq"] ?? "?"
                    let floor = (c["ack_floor"] as? [String: Any])?["stream_seq"] ?? "?"
                    lines.append(
                        "\(stream["name"] ?? "?") \(c["name"] ?? "?")\(leads ? " (leader)" : "") ack_pending=\(c["num_ack_pending"] ?? "?") "
                            + "redelivered=\(c["num_redelivered"] ?? "?") pending=\(c["num_pending"] ?? "?") delivered=\(delivered) ack_floor=\(floor) "
                            + "bound=\(c["push_bound"] ?? false)")
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    /// Node `i`'s log.
    package func log(_ i: Int) -> String { (try? String(contentsOfFile: "\(directory)/n\(i).log", encoding: .utf8)) ?? "" }

    /// Stops node `i` by its PID (SIGKILL: its machine is lost).
    package func stop(_ i: Int, signal: Int32 = SIGTERM) {
        let p = lock.withLock { () -> ChildProcess? in
            defer { processes[i] = nil }
            return processes[i]
        }
        _ = p?.stop(signal: signal, timeout: 15)
    }

    deinit {
        for i in nodes.indices { stop(i) }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
