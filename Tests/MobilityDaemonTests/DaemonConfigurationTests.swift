import Foundation
import MQTTTransport
import TestSupport
import Testing

@testable import MobilityDaemon

@Suite struct DaemonConfigurationTests {
    @Test func flagsBeatEnvironmentBeatFile() throws {
        let file = TemporaryPath.make("mw-conf", suffix: ".conf")
        try "# comment\nbroker = mqtt://file:1\nshards = 3\nrules = file-rules\n".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let c = try DaemonConfiguration.load(
            arguments: ["--config", file, "--broker=mqtt://flag:2", "--clock", "event"],
            environment: ["MOBILITYD_BROKER": "mqtt://env:3", "MOBILITYD_SHARDS": "5"])
        #expect(c.broker == "mqtt://flag:2")
        #expect(c.shards == 5)
        #expect(c.rules == "file-rules")
        #expect(c.clock == .event)
    }

    @Test(arguments: [
        ["--clock", "sundial"], ["--broker", "http://x"], ["--broker", "mqtt://a,mqtts://b"], ["--broker", "mqtt://a,"], ["--shards", "0"], ["--nope"],
        ["--broker"], ["stray"],
        ["--time-zone", "Mars/Base"], ["--cert-file", "c.pem"], ["--mqtt-version", "4"], ["--topic-root", "a/#"],
        ["--commit-interval", "-1"], ["--commit-interval", "soon"], ["--ca-file", "ca.pem"], ["--cert-file", "c.pem", "--key-file", "k.pem"]
    ])
    func rejectsBadOptions(args: [String]) {
        #expect(throws: DaemonConfiguration.Problem.self) { try DaemonConfiguration.load(arguments: args, environment: [:]) }
    }

    /// TLS files are taken with an `mqtts://` broker (a plain one would not use them: refused above).
    @Test func tlsFilesGoWithAnMQTTSBroker() throws {
        let c = try DaemonConfiguration.load(
            arguments: ["--broker", "mqtts://h:8883", "--ca-file", "ca.pem", "--cert-file", "c.pem", "--key-file", "k.pem"], environment: [:])
        #expect(c.caFile == "ca.pem" && c.certFile == "c.pem" && c.keyFile == "k.pem")
    }

    /// `--broker` takes the nodes of one cluster, tried in the order given; the clients connect
    /// to the first and move to the others (``MQTTClientConfiguration/fallbacks``).
    @Test func severalBrokersAreTheNodesOfOneClusterInOrder() throws {
        let c = try DaemonConfiguration.load(arguments: ["--broker", "mqtt://n1:1883,mqtt://n2:1884"], environment: [:])
        #expect(c.brokers.map(\.description) == ["mqtt://n1:1883", "mqtt://n2:1884"])
        let d = Daemon(configuration: c)
        var m = MQTTClientConfiguration(broker: c.brokers[0], clientID: "x")
        d.applyCommon(&m)
        #expect(m.fallbacks.map(\.description) == ["mqtt://n2:1884"])
    }

    /// `#` starts a comment only at the start of a line or after whitespace: a password may hold it.
    @Test func aHashInsideAValueIsNotAComment() throws {
        let file = TemporaryPath.make("mw-conf", suffix: ".conf")
        try "# comment\npassword = pa#ss  # the broker's\nusername = svc#1\npublisher-username = svc#2\n".write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let c = try DaemonConfiguration.load(arguments: ["--config", file], environment: [:])
        #expect(c.password == "pa#ss")
        #expect(c.username == "svc#1")
    }

    @Test func helpListsEveryOption() {
        for o in DaemonConfiguration.options { #expect(DaemonConfiguration.usage.contains("--\(o.name)")) }
    }

    @Test func shardsDefaultToAllCoresButOne() throws {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        #expect(try DaemonConfiguration.load(arguments: [], environment: [:]).shards == max(1, cores - 1))
        #expect(try DaemonConfiguration.load(arguments: ["--shards", "4"], environment: [:]).shards == 4)
    }

    @Test func commitIntervalDefaultsAndParses() throws {
        #expect(try DaemonConfiguration.load(arguments: [], environment: [:]).commitIntervalMs == 100)
        #expect(try DaemonConfiguration.load(arguments: ["--commit-interval", "0"], environment: [:]).commitIntervalMs == 0)
        #expect(try DaemonConfiguration.load(arguments: [], environment: ["MOBILITYD_COMMIT_INTERVAL": "250"]).commitIntervalMs == 250)
        // Partitioned: 500 ms by default with the JetStream intake (a commit's fixed cost is paid
        // per instance and interval), 100 with the MQTT sessions (every batch commits anyway);
        // as given either way.
        let partitioned = ["--store", "postgres://mw@127.0.0.1:5432/state", "--partitions", "8", "--nats", "nats://127.0.0.1:4222"]
        #expect(try DaemonConfiguration.load(arguments: partitioned, environment: [:]).commitIntervalMs == 500)
        #expect(try DaemonConfiguration.load(arguments: partitioned + ["--intake", "mqtt"], environment: [:]).commitIntervalMs == 100)
        #expect(try DaemonConfiguration.load(arguments: partitioned + ["--commit-interval", "100"], environment: [:]).commitIntervalMs == 100)
    }
}

/// Group commit: what may wait for a later batch's commit, and what may not.
@Suite struct CommitPolicyTests {
    @Test func onlyJournalledChangesWithoutOutputsWait() {
        let ms: UInt64 = 1_000_000
        func scope(
            outputs: Bool = false, earlier: Bool = false, barrier: Bool = false, keeper: ShardCommitPolicy.Keeper = .journal, users: Int = 10,
            awaiting: Bool = false, backlog: Bool = false, since: UInt64 = 5 * ms, interval: UInt64 = 100 * ms
        ) -> ShardCommitPolicy.Scope {
            ShardCommitPolicy.scope(
                outputs: outputs, earlierOutputs: earlier, barrier: barrier, keeper: keeper, pendingUsers: users, awaitingWaiter: awaiting,
                backlog: backlog, sinceLastCommitNs: since, intervalNs: interval)
        }
        #expect(scope() == .none)  // state changes only, within the interval: they wait
        #expect(scope(outputs: true) == .batch)  // outputs go out at once, with the users that made them
        #expect(scope(outputs: true, earlier: true) == .all)  // outputs of a failed commit: everything, in order
        #expect(scope(barrier: true) == .all)  // a caller waits for durability
        #expect(scope(keeper: .none) == .all)  // nothing else holds the messages
        // A stream holds its partition's batch until the commit: it waits for the interval too,
        // but what commits takes everyone (a stream position goes only with every user).
        #expect(scope(keeper: .stream) == .none && scope(keeper: .stream, since: 100 * ms) == .all)
        #expect(scope(outputs: true, keeper: .stream) == .all && scope(barrier: true, keeper: .stream) == .all)
        #expect(scope(keeper: .stream, users: ShardCommitPolicy.maxPendingUsers) == .all && scope(keeper: .stream, interval: 0) == .all)
        // More input waiting behind a waiter: at once, but never before a hand-off's waiter has come.
        #expect(scope(keeper: .stream, backlog: true) == .all && scope(keeper: .stream, awaiting: true, backlog: true) == .none)
        // A partition's hand-off whose waiter has not come yet waits for it, whatever else holds;
        // a barrier's caller does not wait.
        for keeper in [ShardCommitPolicy.Keeper.none, .stream] {
            #expect(scope(outputs: true, earlier: true, keeper: keeper, users: ShardCommitPolicy.maxPendingUsers, awaiting: true, interval: 0) == .none)
            #expect(scope(barrier: true, keeper: keeper, awaiting: true) == .all)
        }
        #expect(scope(awaiting: true) == .none && scope(outputs: true, awaiting: true) == .batch)  // a journal holds them: as without
        #expect(scope(since: 100 * ms) == .all)  // the interval has passed
        #expect(scope(users: ShardCommitPolicy.maxPendingUsers) == .all)  // a commit stays bounded
        #expect(scope(interval: 0) == .all)  // --commit-interval 0: every batch
    }
}

/// One account for both MQTT connections: against a broker that binds client ids to usernames
/// (the shipped one) they evict each other, so it is refused unless the operator says otherwise.
@Suite struct BrokerAccountTests {
    static func problem(_ args: [String]) -> String? {
        do { _ = try DaemonConfiguration.load(arguments: args, environment: [:]); return nil } catch { return error.description }
    }

    @Test func oneAccountForBothConnectionsIsRefusedUnlessTheBrokerKeepsClientIDsApart() {
        for args in [["--username", "mobilityd"], ["--username", "mobilityd", "--publisher-username", "mobilityd"]] {
            let p = Self.problem(args)
            #expect(p?.contains("both MQTT connections would log in as 'mobilityd'") == true, "\(args)")
            #expect(p?.contains("--publisher-username") == true && p?.contains("--broker-binds-client-ids false") == true)
        }
        #expect(Self.problem(["--username", "mobilityd", "--publisher-username", "mobilityd-pub"]) == nil)
        #expect(Self.problem(["--username", "mobilityd", "--broker-binds-client-ids", "false"]) == nil)
        #expect(Self.problem([]) == nil)  // anonymous: the two client ids differ
        #expect(Self.problem(["--broker-binds-client-ids", "maybe"])?.contains("true or false") == true)
    }
}

/// `/metrics` and `/healthz` have neither TLS nor tokens: docs/security.md keeps them on loopback,
/// and mobilityd refuses any other address instead of listening there without a word.
@Suite struct MetricsAddressTests {
    @Test(arguments: ["0.0.0.0:9464", "10.1.2.3:9464", "192.168.0.5:0", "localhost:9464"])
    func aMetricsAddressOffLoopbackIsRefused(address: String) {
        do {
            _ = try DaemonConfiguration.load(arguments: ["--metrics-address", address], environment: [:])
            Issue.record("accepted \(address)")
        } catch {
            #expect(error.description.contains("is not a loopback address") && error.description.contains(address), "\(error)")
        }
    }

    @Test func loopbackAndOffAreAccepted() throws {
        #expect(try DaemonConfiguration.load(arguments: ["--metrics-address", "127.0.0.2:0"], environment: [:]).metricsAddress == "127.0.0.2:0")
        #expect(try DaemonConfiguration.load(arguments: ["--metrics-address", "off"], environment: [:]).metricsAddress == nil)
        #expect(try DaemonConfiguration.load(arguments: [], environment: [:]).metricsAddress == "127.0.0.1:9464")
    }
}
