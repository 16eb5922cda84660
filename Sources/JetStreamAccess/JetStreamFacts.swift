/// What a partitioned instance found at its NATS broker (``JetStreamInspector``): the MQTT
/// listener's streams, the JetStream consumers behind the MQTT sessions that matter, and the
/// partitions' pull consumers.
package struct JetStreamFacts: Sendable, Equatable {
    /// One of the MQTT listener's streams (`$MQTT_msgs`, `$MQTT_sess`, `$MQTT_rmsgs`).
    package struct Stream: Sendable, Equatable {
        package var name: String
        package var replicas: Int
        /// Whether the stream lives in a JetStream cluster (it has a cluster name).
        package var clustered: Bool
        package init(name: String, replicas: Int, clustered: Bool) {
            self.name = name
            self.replicas = replicas
            self.clustered = clustered
        }
    }
    /// The JetStream consumer behind an MQTT session's subscription.
    package struct Consumer: Sendable, Equatable {
        package var name: String
        package var maxAckPending: Int64
        package var ackWaitNanoseconds: Int64
        package init(name: String, maxAckPending: Int64, ackWaitNanoseconds: Int64) {
            self.name = name
            self.maxAckPending = maxAckPending
            self.ackWaitNanoseconds = ackWaitNanoseconds
        }
    }
    /// The streams found (a missing one is absent).
    package var streams: [Stream] = []
    /// The consumer the broker made for the check's own probe session: what the broker's
    /// settings give a partition session created now (nil: none was found).
    package var probe: Consumer?
    /// The existing consumers of the partition sessions, by partition: each keeps the settings
    /// it was created under, whatever the configuration says now.
    package var partitions: [Int: Consumer] = [:]
    /// The names of the JetStream intake's consumers of each partition (by their names,
    /// `{session prefix}{k}-…`): what an earlier JetStream intake left, and keeps until it is
    /// deleted.
    package var pullConsumers: [Int: [String]] = [:]

    package init() {}
}
