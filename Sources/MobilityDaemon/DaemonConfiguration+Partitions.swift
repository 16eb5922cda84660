/// Partitioned input (`--partitions P`): the broker divides users into P partitions by
/// its subject mapping (NATS `partition(P, 1)`, docs/scaling.md) and republishes each input under
/// `{prefix}`; this instance consumes only the partitions it holds a lease on (``PartitionIntake``:
/// a JetStream pull consumer each, or a persistent MQTT session each), and its outputs stay on
/// the contract's topics.
package struct Partitioning: Sendable, Equatable {
    /// The number of partitions P (the broker's mapping must use the same).
    package var count: Int
    /// The topic prefix of partition k's inputs, `{k}` standing for k (default `part/{k}/`).
    package var prefix: String = "part/{k}/"
    /// How long a lease on a partition lasts unrenewed (`--lease`, milliseconds); a dead
    /// instance's partitions are taken after it.
    package var leaseMs: Int = 10_000
    /// The name prefix of partition k's JetStream consumers (this, k, then the owner's token and
    /// run), or with `--intake mqtt` partition k's MQTT client id (this followed by k)
    /// (`--partition-session`): the same on every instance, so that the next owner finds the
    /// partition's earlier consumers or inherits the session's backlog.
    package var sessionPrefix: String = "mobilityd-part-"
    /// The NATS client URLs of the cluster's nodes (`--nats`), for the start check of the
    /// JetStream settings partitioned input relies on (``JetStreamRequirements``).
    package var natsURLs: [String] = []
    /// How the owned partitions' inputs are consumed (`--intake`).
    package var intake: PartitionIntake = .jetStream

    /// What the names of partition `k`'s JetStream consumers begin with (the JetStream intake's:
    /// ``sessionPrefix``, k, `-`; the owner's token and run follow).
    package func consumerPrefix(of k: Int) -> String { "\(sessionPrefix)\(k)-" }

    /// The prefix of partition `k`'s topics.
    package func prefix(of k: Int) -> String { prefix.replacingOccurrences(of: "{k}", with: String(k)) }

    /// Partition `k`'s input subscription: one filter for the four input kinds under its prefix
    /// (the broker maps only those there). One, because NATS gives each subscription of an MQTT
    /// session a JetStream consumer of its own: with a filter per kind, a user's events and
    /// profile overtook their samples, and the alerts differed from the replay's.
    package func subscriptions(of k: Int, root: String) -> [String] { ["\(prefix(of: k))\(root)/users/+/+"] }

    /// How often leases are renewed and ownership reconsidered: a third of the lease.
    package var heartbeatMs: Int { max(100, leaseMs / 3) }
}

/// How a partitioned instance consumes its partitions' inputs (`--intake`).
package enum PartitionIntake: String, Sendable, Equatable {
    /// `mqtt`: a persistent MQTT session per partition on NATS's MQTT listener, one message in
    /// flight, acknowledged after its commit (exact only with `max_ack_pending: 1`).
    case mqttSessions = "mqtt"
    /// `jetstream`: a durable JetStream pull consumer per partition on the MQTT listener's stream,
    /// fetched in batches, committed, then acknowledged; a takeover resumes after the last
    /// committed stream sequence (exact with NATS's consumer defaults).
    case jetStream = "jetstream"
}

extension DaemonConfiguration {
    static let partitionOptions: [Option] = [
        Option(
            name: "partitions", value: "P",
            help:
                "consume only this instance's partitions of P (the broker's mapping partition(P,1), docs/scaling.md); needs --store postgres://… (default: off, one instance consumes everything)"
        ),
        Option(
            name: "nats", value: "URL[,URL…]",
            help:
                "NATS client URLs (nats:// or tls://, the --username/--password and --ca-file of the broker), tried in this order: this instance's own node first (the node of its --broker), then the others; for the start check of the broker's JetStream settings and, with --intake jetstream, the partitions' data; required with --partitions"
        ),
        Option(
            name: "intake", value: "mqtt|jetstream",
            help:
                "how partitions are consumed: a JetStream pull consumer each on NATS's MQTT stream, over --nats (jetstream, the default: exact with NATS's consumer defaults) or an MQTT session each (mqtt: needs the node file's max_ack_pending: 1 and ack_wait, checked at start)"
        ),
        Option(name: "partition-prefix", value: "TEMPLATE", help: "topic prefix of partition {k}'s inputs (default part/{k}/)"),
        Option(name: "lease", value: "SECONDS", help: "partition lease; a dead instance's partitions move after it (default 10)"),
        Option(
            name: "partition-session", value: "PREFIX",
            help:
                "partition k's JetStream consumers are named PREFIX, k, then the owner's token and run (with --intake mqtt: its MQTT client id is PREFIX then k), on every instance (default mobilityd-part-)"
        )
    ]

    mutating func applyPartitions(_ m: [String: String]) throws(Problem) {
        guard let v = m["partitions"] else {
            for o in ["partition-prefix", "lease", "partition-session", "nats", "intake"] where m[o] != nil {
                throw Problem(description: "--\(o) needs --partitions")
            }
            return
        }
        guard let count = Int(v), (1...4096).contains(count) else {
            throw Problem(description: "--partitions must be a number of partitions in 1...4096, not '\(v)'")
        }
        guard case .postgres = store else {
            throw Problem(description: "--partitions needs --store postgres://…: the next owner of a partition reads its state from the shared store")
        }
        var p = Partitioning(count: count)
        let urls = (m["nats"] ?? "").split(separator: ",").map { String($0.filter { $0 != " " }) }
        guard !urls.isEmpty else {
            throw Problem(
                description:
                    "--partitions needs --nats nats://HOST:4222[,…] (or tls://…): mobilityd checks at start that the broker's JetStream settings keep partitioned input exact (docs/brokers.md, deploy/nats-node.conf)"
            )
        }
        for u in urls where !(u.hasPrefix("nats://") || u.hasPrefix("tls://")) || u.contains("@") {
            throw Problem(
                description: "--nats takes nats://HOST:PORT or tls://HOST:PORT URLs without credentials (they come from --username and --password), not '\(u)'")
        }
        p.natsURLs = urls
        if let i = m["intake"] {
            guard let intake = PartitionIntake(rawValue: i) else { throw Problem(description: "--intake must be mqtt or jetstream, not '\(i)'") }
            p.intake = intake
        }
        if let t = m["partition-prefix"] {
            guard t.contains("{k}"), t.hasSuffix("/"), !t.hasPrefix("/"), !t.contains("+"), !t.contains("#"), !t.contains(" ") else {
                throw Problem(description: "--partition-prefix must hold {k}, end with '/' and have no wildcard or space, e.g. part/{k}/")
            }
            p.prefix = t
        }
        if let s = m["lease"] {
            guard let seconds = Double(s), seconds >= 1, seconds <= 300 else { throw Problem(description: "--lease must be seconds in 1...300, not '\(s)'") }
            p.leaseMs = Int(seconds * 1000)
        }
        if let s = m["partition-session"] {
            guard !s.isEmpty, s.utf8.count <= 16, s.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                throw Problem(description: "--partition-session must be 1–16 letters, digits, - or _")
            }
            p.sessionPrefix = s
        }
        partitioning = p
    }
}
