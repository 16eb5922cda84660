import JetStreamAccess

/// The properties of the broker that `mobilityd --partitions` relies on, as a pure rule.
package enum JetStreamRequirements {
    /// The longest redelivery wait accepted: a partition taken over waits this long for the one
    /// message its previous owner had in flight.
    package static let maxAckWaitSeconds: Int64 = 5
    /// Replicas of each MQTT stream on a cluster: three nodes, so that one may be lost.
    package static let clusterReplicas = 3
    /// The file that has the settings.
    package static let file = "deploy/nats-node.conf"

    /// Everything in `facts` that breaks the rule; empty when the broker is fit. With `intake`
    /// ``PartitionIntake/jetStream`` the MQTT sessions' consumer settings do not matter (the
    /// partitions' pull consumers keep their order themselves): the streams are checked, and
    /// the partitions must have no MQTT session of an earlier `--intake mqtt` — consumed anew
    /// from the stream, a partition's messages committed and not yet acknowledged by a session
    /// would be applied twice, and the session's consumer would keep every later message of the
    /// partition in the stream (retention *interest*) for good. With ``PartitionIntake/mqttSessions``
    /// the sessions' settings are checked, and the partitions must have no pull consumer of an
    /// earlier JetStream intake: a new MQTT session is delivered only the stream's messages from
    /// its subscription on, so what such a consumer took and did not commit would be skipped.
    package static func problems(_ facts: JetStreamFacts, intake: PartitionIntake) -> [String] {
        var out: [String] = []
        for name in ["$MQTT_msgs", "$MQTT_sess"] where !facts.streams.contains(where: { $0.name == name }) {
            out.append(
                "the broker has no JetStream stream \(name): JetStream and the MQTT listener must be on (jetstream {} and mqtt {} in the NATS configuration, \(file))"
            )
        }
        for s in facts.streams where s.clustered && s.replicas < clusterReplicas {
            out.append(
                "JetStream stream \(s.name) has \(s.replicas) replicas on a cluster; mobilityd needs \(clusterReplicas) (mqtt { stream_replicas: \(clusterReplicas) } on every node, \(file)): with fewer, the loss of one node stalls MQTT on the whole cluster"
            )
        }
        if intake == .jetStream {
            let sessions = facts.partitions.sorted { $0.key < $1.key }
            if !sessions.isEmpty {
                out.append(
                    "partitions \(sessions.map { String($0.key) }.joined(separator: ",")) have MQTT sessions (JetStream consumers \(sessions.map(\.value.name).joined(separator: ",")) of $MQTT_msgs): they were consumed with --intake mqtt, and the JetStream intake (the default) would apply what a session has not acknowledged again while the session keeps every later message in the stream; run with --intake mqtt, or switch with every instance stopped and the sessions drained: delete those consumers (nats consumer rm '$MQTT_msgs' NAME -f), then start (docs/scaling.md)"
                )
            }
            return out
        }
        let pulled = facts.pullConsumers.filter { !$0.value.isEmpty }.sorted { $0.key < $1.key }
        if !pulled.isEmpty {
            out.append(
                "partitions \(pulled.map { String($0.key) }.joined(separator: ",")) have the JetStream intake's consumers (\(pulled.flatMap { $0.value.sorted() }.joined(separator: ",")) of $MQTT_msgs): they were consumed with the JetStream intake (the default), and an MQTT session starts at the stream's next message, skipping what those consumers have not committed, while they keep every later message in the stream; run without --intake mqtt, or switch with every instance stopped and the consumers drained: delete them (nats consumer rm '$MQTT_msgs' NAME -f), then start (docs/scaling.md)"
            )
        }
        guard let probe = facts.probe else {
            out.append("the broker made no JetStream consumer for the check's MQTT subscription, so its MQTT settings cannot be checked")
            return out
        }
        out += consumerProblems(probe, what: "the broker's MQTT sessions get", fix: " on every node, and restart it")
        for (k, c) in facts.partitions.sorted(by: { $0.key < $1.key }) {
            out += consumerProblems(
                c, what: "partition \(k)'s MQTT session (JetStream consumer \(c.name) of $MQTT_msgs) was created with",
                fix: "; a session keeps the settings it was created with: update its consumer too (nats consumer edit)")
        }
        return out
    }

    private static func consumerProblems(_ c: JetStreamFacts.Consumer, what: String, fix: String) -> [String] {
        var out: [String] = []
        if c.maxAckPending != 1 {
            out.append(
                "\(what) max_ack_pending \(c.maxAckPending); mobilityd --intake mqtt needs 1 (mqtt { max_ack_pending: 1 }, commented out in \(file)\(fix)): with more, a partition taken over gets later messages before those its previous owner left unacknowledged, and alerts are lost or wrong"
            )
        }
        if c.ackWaitNanoseconds > maxAckWaitSeconds * 1_000_000_000 {
            let seconds = Double(c.ackWaitNanoseconds) / 1e9
            out.append(
                "\(what) ack_wait \(seconds) s; mobilityd --intake mqtt needs at most \(maxAckWaitSeconds) s (mqtt { ack_wait: \"2s\" }, commented out in \(file)\(fix)): a partition taken over waits that long for the message its previous owner had in flight"
            )
        }
        return out
    }
}
