import Foundation
import JetStreamAccess
import Synchronization
import TestSupport
import Testing

/// A durable pull consumer of the stream NATS's MQTT listener keeps QoS 1 messages in, on a real
/// nats-server started from the shipped node file, fed by `mosquitto_pub` through the MQTT
/// listener (so the stream, the subjects and the partition mapping are NATS's own).
@Suite(.serialized) struct JetStreamPullConsumerTests {
    /// Partition 0..<4's input subject filter, as NATS stores the mapped MQTT topics.
    static let allPartitions = JetStreamInspector.subject("part/+/mobility/v1/users/+/+")

    static func connect(_ nats: NATSCluster) throws -> NATSConnection {
        try NATSConnection(urls: [nats.nodes[0].natsURL], username: "mobilityd", password: nats.password, caFile: nats.caFile, certFile: nil, keyFile: nil)
    }

    /// Publishes `payloads` at QoS 1 to `topic` through node 0's MQTT listener, one message each, in order.
    static func publish(_ nats: NATSCluster, topic: String, _ payloads: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
        p.arguments = [
            "-h", "127.0.0.1", "-p", String(nats.nodes[0].mqttPort), "--cafile", nats.caFile, "-u", "mobilityd", "-P", nats.password, "-q", "1",
            "-V", "mqttv311", "-i", "pub-\(UUID().uuidString.prefix(8))", "-t", topic, "-l"
        ]
        let input = Pipe()
        p.standardInput = input
        try p.run()
        input.fileHandleForWriting.write(Data(payloads.map { $0 + "\n" }.joined().utf8))
        try input.fileHandleForWriting.close()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "mosquitto_pub failed")
    }

    /// Fetches until `count` messages came (or 20 s passed).
    static func fetch(_ c: JetStreamPullConsumer, count: Int) throws -> [JetStreamPullConsumer.Message] {
        var got: [JetStreamPullConsumer.Message] = []
        let deadline = Date().addingTimeInterval(20)
        while got.count < count, Date() < deadline { got += try c.fetch(max: count - got.count, timeoutMs: 1000) }
        return got
    }

    /// Messages come in stream order with their sequence, subject and payload; an acknowledgement
    /// of one acknowledges those before it; a consumer created at a later sequence gets the
    /// unacknowledged rest at once (no wait for a redelivery), and the first one deleted after it
    /// was created loses nothing of them.
    @Test func fetchesInOrderAcknowledgesCumulativelyAndResumesAtASequence() throws {
        let nats = try NATSCluster(size: 1, partitions: 4)
        let connection = try Self.connect(nats)
        // Created before anything is published: the MQTT stream keeps messages only while a consumer wants them.
        let first = try JetStreamPullConsumer(connection: connection, stream: "$MQTT_msgs", name: "test-a", filter: Self.allPartitions, startSequence: 1)
        #expect(first.created)
        #expect(try first.fetch(max: 10, timeoutMs: 200).isEmpty)
        let payloads = (1...5).map { "{\"n\":\($0)}" }
        try Self.publish(nats, topic: "mobility/v1/users/u1/samples", payloads)
        let got = try Self.fetch(first, count: 5)
        #expect(got.map { String(decoding: $0.payload, as: UTF8.self) } == payloads)
        #expect(zip(got, got.dropFirst()).allSatisfy { $0.sequence < $1.sequence }, "\(got.map(\.sequence))")
        #expect(got.allSatisfy { $0.deliveries == 1 })
        // A consumer numbers its deliveries from 1, one more each: what tells one that never arrived.
        #expect(got.map(\.delivery) == [1, 2, 3, 4, 5])
        for m in got {
            // The mapping put the user in a partition; the subject is the topic as NATS's MQTT listener makes it.
            let parts = m.subject.split(separator: ".")
            #expect(m.subject.hasPrefix("$MQTT.msgs.part.") && m.subject.hasSuffix(".mobility.v1.users.u1.samples"), "\(m.subject)")
            #expect(parts.count == 9 && Int(parts[3]).map { (0..<4).contains($0) } == true, "\(m.subject)")
        }
        try first.acknowledge(through: got[2])
        // Not waited for: the server's account catches up.
        #expect(eventually { (try? first.position())?.acknowledgedThrough == got[2].sequence })
        let position = try first.position()
        #expect(
            [position.acknowledgedThrough, position.deliveredThrough, position.lastDelivery, UInt64(position.pendingAcknowledgement), position.undelivered]
                == [got[2].sequence, got[4].sequence, 5, 2, 0], "\(position)")
        #expect(position.replicasCurrent)

        let second = try JetStreamPullConsumer(
            connection: connection, stream: "$MQTT_msgs", name: "test-b", filter: Self.allPartitions, startSequence: got[2].sequence + 1)
        try connection.deleteConsumer(stream: "$MQTT_msgs", name: "test-a")
        #expect(try connection.consumerNames(stream: "$MQTT_msgs").filter { $0.hasPrefix("test-") } == ["test-b"])
        let rest = try Self.fetch(second, count: 2)
        #expect(rest.map(\.sequence) == [got[3].sequence, got[4].sequence])
        #expect(rest.map(\.delivery) == [1, 2])
        #expect(rest.map(\.payload) == [got[3].payload, got[4].payload])
        try second.acknowledge(through: rest[1])
        #expect(eventually { (try? second.position())?.acknowledgedThrough == got[4].sequence })
        #expect(try connection.streamState(stream: "$MQTT_msgs").lastSequence == got[4].sequence)

        // Bound again by its name: the consumer keeps its own position, whatever start is asked.
        let again = try JetStreamPullConsumer(connection: connection, stream: "$MQTT_msgs", name: "test-b", filter: Self.allPartitions, startSequence: 1)
        #expect(!again.created)
        try Self.publish(nats, topic: "mobility/v1/users/u1/samples", ["{\"n\":6}"])
        let sixth = try Self.fetch(again, count: 1)
        #expect(sixth.map(\.sequence) == [got[4].sequence + 1])
    }

    /// Messages already waiting on the subscription when a fetch begins (the server's late answer
    /// to an earlier fetch that returned before it came) are taken first, and a fetch never hands
    /// out more than it was asked for. (libnats 3.4's `natsSubscription_Fetch`, finding more than
    /// half its batch waiting, asked the server for the rest and then read until its count equalled
    /// that rest — past the end of its array when more arrived meanwhile.) Made here with requests
    /// of our own to the subscription's inbox: 300 messages waiting, a fetch of at most 400, and
    /// 300 more delivered to the inbox (by a second consumer) while it still reads.
    @Test func messagesWaitingOnTheSubscriptionAreTakenFirstAndNeverMoreThanAsked() throws {
        let nats = try NATSCluster(size: 1, partitions: 4)
        let connection = try Self.connect(nats), other = try Self.connect(nats)
        let c = try JetStreamPullConsumer(connection: connection, stream: "$MQTT_msgs", name: "test-w", filter: Self.allPartitions, startSequence: 1)
        let x = try JetStreamPullConsumer(connection: other, stream: "$MQTT_msgs", name: "test-x", filter: Self.allPartitions, startSequence: 1)
        let payloads = (1...700).map { "{\"n\":\($0)}" }
        try Self.publish(nats, topic: "mobility/v1/users/u1/samples", payloads)
        #expect(c.inbox.hasPrefix("_INBOX."), "\(c.inbox)")
        try other.publish(subject: "$JS.API.CONSUMER.MSG.NEXT.$MQTT_msgs.test-w", reply: c.inbox, payload: #"{"batch":300,"expires":10000000000}"#)
        #expect(eventually(timeout: 10) { c.waiting == 300 }, "waiting: \(c.waiting)")
        let late = Thread {
            usleep(300_000)
            try? other.publish(subject: "$JS.API.CONSUMER.MSG.NEXT.$MQTT_msgs.test-x", reply: c.inbox, payload: #"{"batch":300,"expires":10000000000}"#)
        }
        late.start()
        let first = try c.fetch(max: 400, timeoutMs: 2000)
        // The 300 waiting come first, in order (the second consumer's may follow if they came in time).
        #expect(first.count >= 300 && first.count <= 400, "\(first.count) messages")
        #expect(first.prefix(300).map(\.delivery) == Array(1...300))
        #expect(first.prefix(300).map { String(decoding: $0.payload, as: UTF8.self) } == Array(payloads[..<300]))
        _ = x
    }

    /// A request the server leaves unanswered (its process stopped) fails within the wait it was
    /// given, as timed out (so the caller asks again at once); answered again, the same
    /// consumer is made under the same name.
    @Test func anUnansweredRequestTimesOutWithinItsWaitAndSaysSo() throws {
        let nats = try NATSCluster(size: 1, partitions: 4)
        defer { nats.signal(0, SIGCONT) }
        let connection = try Self.connect(nats)
        nats.signal(0, SIGSTOP)
        let began = Date()
        #expect {
            _ = try connection.streamState(stream: "$MQTT_msgs", timeoutMs: 500)
        } throws: { e in
            (e as? JetStreamFailure)?.timedOut == true && "\(e)".contains("$MQTT_msgs")
        }
        #expect {
            _ = try JetStreamPullConsumer(
                connection: connection, stream: "$MQTT_msgs", name: "test-t", filter: Self.allPartitions, startSequence: 1, timeoutMs: 500)
        } throws: { e in
            (e as? JetStreamFailure)?.timedOut == true && "\(e)".contains("test-t")
        }
        let waited = Date().timeIntervalSince(began)
        #expect(waited < 2.5, "two requests given 0.5 s each took \(waited) s")
        nats.signal(0, SIGCONT)
        let c = try JetStreamPullConsumer(
            connection: connection, stream: "$MQTT_msgs", name: "test-t", filter: Self.allPartitions, startSequence: 1, timeoutMs: 2000)
        try Self.publish(nats, topic: "mobility/v1/users/u1/samples", ["[]"])
        #expect(try Self.fetch(c, count: 1).map(\.payload) == [Array("[]".utf8)])
        // Made again as unused: one that delivered nothing, from a sequence at or before the one
        // wanted, is bound; one that delivered, or starts after it, is refused (not as timed out).
        #expect(try JetStreamPullConsumer(connection: connection, stream: "$MQTT_msgs", name: "test-u", filter: Self.allPartitions, startSequence: 1).created)
        #expect(
            try !JetStreamPullConsumer(connection: connection, stream: "$MQTT_msgs", name: "test-u", filter: Self.allPartitions, startSequence: 2, unused: true)
                .created)
        func refusedAsUsed(_ name: String, _ start: UInt64) {
            #expect {
                _ = try JetStreamPullConsumer(
                    connection: connection, stream: "$MQTT_msgs", name: name, filter: Self.allPartitions, startSequence: start, unused: true)
            } throws: { e in
                (e as? JetStreamFailure)?.timedOut == false && "\(e)".contains("a new one is wanted from \(start)")
            }
        }
        refusedAsUsed("test-t", 1)  // it delivered a message
        #expect(try JetStreamPullConsumer(connection: connection, stream: "$MQTT_msgs", name: "test-v", filter: Self.allPartitions, startSequence: 5).created)
        refusedAsUsed("test-v", 3)  // it starts at 5
        // A refusal is not a timeout.
        #expect {
            _ = try JetStreamPullConsumer(connection: connection, stream: "no_such_stream", name: "x", filter: "a.b", startSequence: 1)
        } throws: { e in
            (e as? JetStreamFailure)?.timedOut == false
        }
    }

    /// A stream that does not exist is a failure that names it, not a crash.
    @Test func aMissingStreamIsNamed() throws {
        let nats = try NATSCluster(size: 1, partitions: 4)
        let connection = try Self.connect(nats)
        #expect {
            _ = try JetStreamPullConsumer(connection: connection, stream: "no_such_stream", name: "x", filter: "a.b", startSequence: 1)
        } throws: { e in
            "\(e)".contains("consumer x of no_such_stream")
        }
    }

    /// A fetch returns what the consumer has without waiting out its time; waits when it has
    /// nothing; is not cut short by the end of an earlier request (a status of the server that
    /// came after that fetch returned); and fails, naming the consumer, when the consumer is
    /// deleted while it waits.
    @Test func aFetchTakesWhatThereIsWaitsOnlyWhenThereIsNoneAndFailsWhenItsConsumerIsDeleted() throws {
        let nats = try NATSCluster(size: 1, partitions: 4)
        let connection = try Self.connect(nats), other = try Self.connect(nats)
        let c = try JetStreamPullConsumer(connection: connection, stream: "$MQTT_msgs", name: "test-f", filter: Self.allPartitions, startSequence: 1)
        try Self.publish(nats, topic: "mobility/v1/users/u1/samples", ["{\"n\":1}", "{\"n\":2}", "{\"n\":3}"])
        #expect(eventually(timeout: 10) { ((try? c.position().undelivered) ?? 0) == 3 })
        let start = Date()
        let three = try c.fetch(max: 10, timeoutMs: 20_000)
        #expect(three.map(\.delivery) == [1, 2, 3])
        #expect(Date().timeIntervalSince(start) < 10, "the fetch waited out its time although the server had answered")

        // Nothing there: the fetch waits; one message a second later ends it at once, not at its
        // time nor when its batch is full; and the end of an earlier request meanwhile (the
        // server's timeout of a request of 300 ms to the same inbox) does not end it empty.
        try other.publish(subject: "$JS.API.CONSUMER.MSG.NEXT.$MQTT_msgs.test-f", reply: c.inbox, payload: #"{"batch":1,"expires":300000000}"#)
        let late = Thread {
            usleep(1_000_000)
            try? Self.publish(nats, topic: "mobility/v1/users/u1/samples", ["{\"n\":4}"])
        }
        late.start()
        let waited = Date()
        let fourth = try c.fetch(max: 10, timeoutMs: 20_000)
        #expect(fourth.map(\.delivery) == [4], "a fetch ended by an earlier request's end")
        #expect(Date().timeIntervalSince(waited) < 10, "the fetch waited for its batch to fill")

        // Deleted while a fetch waits: the server ends the request ("409 Consumer Deleted").
        let watcher = try JetStreamPullConsumer(connection: other, stream: "$MQTT_msgs", name: "test-f", filter: Self.allPartitions, startSequence: 1)
        let outcome = Mutex<String?>(nil)
        Thread {
            do {
                let got = try c.fetch(max: 10, timeoutMs: 20_000)
                outcome.withLock { $0 = "\(got.count) messages" }
            } catch {
                outcome.withLock { $0 = "\(error)" }
            }
        }.start()
        #expect(eventually(timeout: 10) { ((try? watcher.position().waitingFetches) ?? 0) > 0 })
        try other.deleteConsumer(stream: "$MQTT_msgs", name: "test-f")
        #expect(eventually(timeout: 10) { outcome.withLock { $0 } != nil })
        let said = outcome.withLock { $0 } ?? ""
        #expect(said.contains("consumer test-f of $MQTT_msgs") && said.contains("409"), "\(said)")
    }

    /// A consumer of that name that exists with another filter is refused, not bound.
    @Test func aConsumerOfAnotherFilterIsNotBound() throws {
        let nats = try NATSCluster(size: 1, partitions: 4)
        let connection = try Self.connect(nats)
        _ = try JetStreamPullConsumer(connection: connection, stream: "$MQTT_msgs", name: "test-o", filter: Self.allPartitions, startSequence: 1)
        let other = JetStreamInspector.subject("part/0/mobility/v1/users/+/+")
        #expect {
            _ = try JetStreamPullConsumer(connection: connection, stream: "$MQTT_msgs", name: "test-o", filter: other, startSequence: 1)
        } throws: { e in
            "\(e)".contains("consumer test-o of $MQTT_msgs is not a pull consumer of \(other)")
        }
    }
}
