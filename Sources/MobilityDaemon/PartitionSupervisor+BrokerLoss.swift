import Dispatch
import Foundation
import MQTTTransport
import PostgresStore

extension PartitionSupervisor {
    /// Gives every lease up when a partition session of the run has had no working broker
    /// connection for a whole lease (its NATS node lost and not back, this machine cut off from
    /// the cluster): the others then count one instance fewer and take the partitions within a
    /// heartbeat, instead of the partitions waiting, consumed by nobody, while this instance
    /// renews their leases. The instance leaves the live count and rejoins when the broker
    /// answers again (``brokerAnswers()``).
    func giveUpIfCutOff(_ loop: inout Loop, leases: PartitionLeases, leaseMs: Int) {
        guard let r = loop.run else { return }
        let cut = r.daemon.partitionLinks.cutOff(for: UInt64(leaseMs) * 1_000_000, now: clock.uptimeNanoseconds())
        guard !cut.isEmpty else { return }
        log.warn(
            "partition sessions without a broker connection for a whole lease; giving up every lease so that other instances take the partitions",
            ["partitions": cut.map(String.init).joined(separator: ","), "lease_s": String(Double(leaseMs) / 1000), "broker": config.broker])
        // The run is asked to stop (its partition inputs first), then the leases are released
        // before waiting for it: its stop may wait seconds on the lost node, which the
        // partitions would otherwise spend without an owner that consumes them. Meanwhile a
        // commit of a partition another instance has claimed is fenced, and what the run took
        // in and did not commit goes to the new owner, unacknowledged.
        r.daemon.requestStop()
        do {
            try leases.release(loop.held)
            try leases.leave()
        } catch { log.warn("cannot release the leases; they lapse after the lease", ["error": "\(error)"]) }
        stopRun(&loop)
        loop.held = []
        loop.away = true
    }

    /// Whether the broker takes a connection again: a clean probe session of this instance,
    /// given 5 seconds.
    func brokerAnswers() -> Bool {
        guard let p = config.partitioning, let c = Self.probeConfiguration(config, clientID: "\(p.sessionPrefix)probe-\(getpid())") else { return false }
        guard let probe = try? MQTTClient(c, onMessage: { _, _ in }) else { return false }
        defer { probe.stop() }
        guard (try? probe.start()) != nil else { return false }
        let deadline = DispatchTime.now() + .seconds(5)
        while !probe.isConnected {
            guard DispatchTime.now() < deadline else { return false }
            usleep(50_000)
        }
        log.info("the broker answers again; rejoining", ["broker": config.broker])
        return true
    }
}
