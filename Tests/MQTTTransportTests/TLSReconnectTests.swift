import Foundation
import Glibc
import TestSupport
import Testing

/// A client over TLS reconnects after its broker is killed and restarted.
@Suite(.serialized) struct TLSReconnectTests {
    /// Regression: libmosquitto's network loop returns for good on `MOSQ_ERR_TLS`, and with
    /// OpenSSL 3 a broker killed under a TLS connection is one ("unexpected eof while
    /// reading"): the client never connected again after the broker's restart. A NATS node
    /// from the shipped configuration (its MQTT listener is TLS only), `kill -9`, restarted on
    /// the same port: the client connects and subscribes again, and a message goes round.
    @Test func aTLSClientReconnectsAfterItsBrokerIsKilledAndRestarted() throws {
        let nats = try NATSCluster(size: 1, partitions: 1)
        let rec = try nats.recorder(0, filters: ["mw-tls/+"])
        #expect(try rec.barrier())
        nats.stop(0, signal: SIGKILL)
        #expect(eventually(timeout: 10) { !rec.isConnected })
        try nats.start(0)
        try nats.waitReady(0)
        #expect(eventually(timeout: 30) { rec.connectionCount >= 2 }, "connections: \(rec.connectionCount)")
        #expect(eventually(timeout: 30) { (try? rec.barrier(timeout: 2)) == true })
    }
}
