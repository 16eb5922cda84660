import Foundation
import Glibc
import HTTPEndpoint

/// Real NATS servers (2.9, `/usr/sbin/nats-server`) for tests, each started from the shipped
/// `deploy/nats-node.conf` (and the `deploy/nats-accounts.conf` it includes) with only ports,
/// paths, names and secrets substituted: one node, or a
/// cluster of several routed on loopback, with JetStream, the MQTT listener (TLS, the
/// `mobilityd` account), the settings mobilityd requires and the partition mapping of the four
/// input kinds. A single node drops the file's `cluster` block and sets `stream_replicas: 1`
/// (JetStream refuses more replicas than nodes). Each node is stopped by its PID on deinit.
package final class NATSCluster: @unchecked Sendable {
    /// Where Debian's package installs the server.
    package static let binary = "/usr/sbin/nats-server"
    /// The shipped node configuration.
    package static let shippedConfiguration = RepoPaths.root + "/deploy/nats-node.conf"
    /// The edit the shipped file asks for with `mobilityd --intake mqtt`: its MQTT sessions'
    /// `max_ack_pending` and `ack_wait` uncommented.
    package static let mqttIntake = [("  # max_ack_pending: 1\n", "  max_ack_pending: 1\n"), ("  # ack_wait: \"2s\"\n", "  ack_wait: \"2s\"\n")]
    /// One node's ports and process.
    package struct Node: Sendable {
        /// The client port, the MQTT port, the cluster (route) port and the monitoring (HTTP)
        /// port, on 127.0.0.1.
        package let clientPort: Int, mqttPort: Int, clusterPort: Int, monitorPort: Int
        /// `mqtts://127.0.0.1:MQTT_PORT`.
        package var url: String { "mqtts://127.0.0.1:\(mqttPort)" }
        /// `tls://127.0.0.1:CLIENT_PORT`: the NATS protocol (mobilityd's `--nats`).
        package var natsURL: String { "tls://127.0.0.1:\(clientPort)" }
    }
    /// The nodes.
    package let nodes: [Node]
    /// The working directory (configs, certificates, JetStream stores, logs).
    package let directory: String
    /// The CA that signed the nodes' certificate (for 127.0.0.1).
    package var caFile: String { directory + "/ca.crt" }
    /// The `mobilityd` account's password (fresh per cluster), and a file holding it (mode 0600).
    package let password = UUID().uuidString
    package var passwordFile: String { directory + "/mobilityd.password" }
    private var processes: [ChildProcess?]
    private let lock = NSLock()

    /// Starts `size` nodes with the mapping into `partitions` partitions and waits until each
    /// serves MQTT sessions.
    /// - Parameter edits: more substitutions in the shipped file (the edit `--intake mqtt` asks for,
    ///   ``mqttIntake``, or a misconfigured broker).
    package init(size: Int = 3, partitions: Int, edits: [(String, String)] = []) throws {
        guard FileManager.default.isExecutableFile(atPath: NATSCluster.binary) else {
            throw HarnessError("nats-server is not installed (\(NATSCluster.binary)): run scripts/install-deps.sh, which installs nats-server")
        }
        directory = TemporaryPath.make("mw-nats")
        // A name of its own: a route from another test's cluster (to a port this one now uses)
        // is refused instead of joining the two.
        let name = "mw-" + directory.suffix(8).filter { $0.isLetter || $0.isNumber }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try TestCertificates.mint(directory)
        for (file, text) in [("/mobilityd.password", password), ("/credentials", "mobilityd \(password)\n")] {
            try text.write(toFile: directory + file, atomically: true, encoding: .utf8)
            chmod(directory + file, 0o600)
        }
        var ns: [Node] = []
        for _ in 0..<size { ns.append(Node(clientPort: try freePort(), mqttPort: try freePort(), clusterPort: try freePort(), monitorPort: try freePort())) }
        nodes = ns
        processes = Array(repeating: nil, count: size)
        let shipped = try String(contentsOfFile: NATSCluster.shippedConfiguration, encoding: .utf8)
        let accounts = try String(contentsOfFile: RepoPaths.root + "/deploy/nats-accounts.conf", encoding: .utf8)
        try NATSCluster.substitute(accounts, [("$REPLACE_WITH_MOBILITYD_PASSWORD", "\"\(password)\"")])
            .write(toFile: directory + "/nats-accounts.conf", atomically: true, encoding: .utf8)
        chmod(directory + "/nats-accounts.conf", 0o600)
        for (i, n) in ns.enumerated() {
            var conf = shipped
            if size == 1 {
                conf = try NATSCluster.removing(block: "cluster {", from: conf)
                conf = try NATSCluster.substitute(conf, [("stream_replicas: 3", "stream_replicas: 1")])
            }
            var subs: [(String, String)] = [
                ("server_name: nats-1", "server_name: n\(i)"),
                ("listen: 0.0.0.0:4222", "listen: 127.0.0.1:\(n.clientPort)"),
                ("http: 127.0.0.1:8222", "http: 127.0.0.1:\(n.monitorPort)"),
                ("listen: 0.0.0.0:8883", "listen: 127.0.0.1:\(n.mqttPort)"),
                ("/etc/nats-server/certs/", directory + "/"),
                ("/var/lib/nats-server/jetstream", "\(directory)/js\(i)"),
                ("partition(64,1)", "partition(\(partitions),1)")
            ]
            if size > 1 {
                subs += [("name: mobilitywatch", "name: \(name)"), ("listen: 0.0.0.0:6222", "listen: 127.0.0.1:\(n.clusterPort)")]
                subs += (1...3).map { ("nats-route://nats-\($0).example.org:6222", $0 <= size ? "nats-route://127.0.0.1:\(ns[$0 - 1].clusterPort)" : "") }
            }
            conf = try NATSCluster.substitute(conf, subs + edits)
            try conf.write(toFile: "\(directory)/n\(i).conf", atomically: true, encoding: .utf8)
        }
        for i in 0..<size { try start(i) }
        for i in 0..<size { try waitReady(i) }
        try waitServingMQTT()
    }

    /// `text` with each `(old, new)` replaced; throws when an `old` is not in it (the shipped
    /// file changed under the test).
    package static func substitute(_ text: String, _ pairs: [(String, String)]) throws -> String {
        var out = text
        for (old, new) in pairs {
            guard out.contains(old) else { throw HarnessError("deploy/nats-node.conf has no '\(old)' to substitute") }
            out = out.replacingOccurrences(of: old, with: new)
        }
        return out
    }

    /// `text` without the block opened by the line starting with `opener` (up to its `}` line).
    static func removing(block opener: String, from text: String) throws -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix(opener) }), let end = lines[start...].firstIndex(of: "}") else {
            throw HarnessError("deploy/nats-node.conf has no '\(opener)' block")
        }
        lines.removeSubrange(start...end)
        return lines.joined(separator: "\n")
    }

    /// A test client on node `i`, logged in as `mobilityd` over TLS (see ``MQTTRecorder``).
    package func recorder(
        _ i: Int = 0, filters: [String], clientID: String = "test-\(UUID().uuidString.prefix(8))", cleanSession: Bool = true
    ) throws
        -> MQTTRecorder
    {
        try MQTTRecorder(
            url: nodes[i].url, filters: filters, clientID: clientID, cleanSession: cleanSession, username: "mobilityd", password: password, caFile: caFile)
    }

    /// Applies `pairs` to node `i`'s configuration (for its next start).
    package func edit(_ i: Int, _ pairs: [(String, String)]) throws {
        let path = "\(directory)/n\(i).conf"
        try NATSCluster.substitute(try String(contentsOfFile: path, encoding: .utf8), pairs).write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// mobilityctl's broker arguments for node `i` (MQTT 3.1.1 is the caller's).
    package func ctlArguments(_ i: Int) -> [String] {
        ["--broker", nodes[i].url, "--ca-file", caFile, "--credentials", directory + "/credentials", "--account", "mobilityd"]
    }

    /// mobilityd's broker arguments for node `i`: its MQTT listener, the CA, the account; with
    /// `everyNode`, every node's listeners in `--broker` and `--nats`, node `i`'s first (as
    /// docs/scaling.md deploys an instance), else node `i`'s alone (a machine whose node is lost
    /// is cut off).
    package func daemonArguments(_ i: Int, everyNode: Bool = false) -> [String] {
        let order = everyNode ? [i] + nodes.indices.filter { $0 != i } : [i]
        return [
            "--broker", order.map { nodes[$0].url }.joined(separator: ","), "--ca-file", caFile, "--username", "mobilityd", "--password-file", passwordFile,
            "--broker-binds-client-ids", "false", "--nats", order.map { nodes[$0].natsURL }.joined(separator: ",")
        ]
    }

    /// Waits until every node serves MQTT sessions: in a cluster the listener is open before
    /// JetStream has a meta leader, and a CONNECT is only answered after.
    package func waitServingMQTT(timeout: TimeInterval = 60) throws {
        let deadline = Date().addingTimeInterval(timeout)
        for n in nodes {
            while true {
                if let r = try? MQTTRecorder(url: n.url, filters: ["mw-ready/+"], username: "mobilityd", password: password, caFile: caFile) {
                    r.stop()
                    break
                }
                guard Date() < deadline else { throw HarnessError("the NATS cluster did not serve MQTT within \(timeout) s; see \(directory)") }
            }
        }
    }

    /// Starts (or restarts) node `i`.
    package func start(_ i: Int) throws {
        let p = try ChildProcess(
            NATSCluster.binary, ["-c", "\(directory)/n\(i).conf"], logPath: "\(directory)/n\(i).log")
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

    /// Node `i`'s view of the JetStream streams and consumers it hosts (its `/jsz` monitoring
    /// endpoint): a line per stream with its state, and a line per consumer: stream, consumer, whether this node leads it, messages delivered and not yet
    /// acknowledged, redelivered, not yet delivered, the last delivered and the acknowledged
    /// stream sequence, fetches waiting, whether a client is bound. What tells a stalled consumer from a lost
    /// message after a failure; "(not answering)" for a node that is down.
    package func consumers(_ i: Int) -> String {
        guard let r = LoopbackHTTP.get(port: nodes[i].monitorPort, path: "/jsz?accounts=true&streams=true&consumers=true"), r.status == 200,
            let root = try? JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any]
        else { return "(not answering)" }
        var lines: [String] = []
        for account in root["account_details"] as? [[String: Any]] ?? [] {
            for stream in account["stream_detail"] as? [[String: Any]] ?? [] {
                // The stream's own state: messages it holds beside those it has numbered tell a
                // message removed (interest retention) from one never stored.
                let state = stream["state"] as? [String: Any] ?? [:]
                let leader = (stream["cluster"] as? [String: Any])?["leader"] ?? "?"
                lines.append(
                    "stream \(stream["name"] ?? "?") leader=\(leader) messages=\(state["messages"] ?? "?") first_seq=\(state["first_seq"] ?? "?") "
                        + "last_seq=\(state["last_seq"] ?? "?") deleted=\(state["num_deleted"] ?? "?")")
                for c in stream["consumer_detail"] as? [[String: Any]] ?? [] {
                    let cluster = c["cluster"] as? [String: Any]
                    let leads = (cluster?["leader"] as? String) == "n\(i)"
                    let delivered = (c["delivered"] as? [String: Any])?["stream_seq"] ?? "?"
                    let floor = (c["ack_floor"] as? [String: Any])?["stream_seq"] ?? "?"
                    lines.append(
                        "\(stream["name"] ?? "?") \(c["name"] ?? "?")\(leads ? " (leader)" : "") ack_pending=\(c["num_ack_pending"] ?? "?") "
                            + "redelivered=\(c["num_redelivered"] ?? "?") pending=\(c["num_pending"] ?? "?") delivered=\(delivered) ack_floor=\(floor) "
                            + "waiting=\(c["num_waiting"] ?? 0) bound=\(c["push_bound"] ?? false)")
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    /// Node `i`'s log.
    package func log(_ i: Int) -> String { (try? String(contentsOfFile: "\(directory)/n\(i).log", encoding: .utf8)) ?? "" }

    /// Sends `signal` to node `i` (SIGSTOP: it freezes, its connections kept open and answered
    /// by nothing; SIGCONT: it goes on).
    package func signal(_ i: Int, _ signal: Int32) { lock.withLock { processes[i] }?.signal(signal) }

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
