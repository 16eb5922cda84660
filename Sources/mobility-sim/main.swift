import Foundation
import MobilityModel
import MQTTTransport
import RuleEngine
import Simulator

/// `mobility-sim`: stands in for the gateways. Exit codes: 0 ok, 1 failure, 2 usage.
let usage = """
usage: mobility-sim <command> [options]

commands:
  record --builtin NAME... -o TRAFFIC.jsonl      write the traffic of built-in scenarios as {"topic","payload"} lines
  play (--builtin NAME... | TRAFFIC.jsonl) --broker URL [--speed max|N]
                                                 publish the traffic at QoS 1, in order; N× event time, or as fast as acked
  list                                           list the built-in scenarios

built-in scenarios: \(BuiltinScenario.allCases.map(\.rawValue).joined(separator: ", "))
"""

func die(_ m: String, _ code: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("mobility-sim: \(m)\n".utf8))
    exit(code)
}

var args = Array(CommandLine.arguments.dropFirst())
guard let command = args.first else { die("\n" + usage) }
args.removeFirst()
var builtins: [BuiltinScenario] = []
var files: [String] = []
var output: String?
var broker: String?
var speed = "max"
var i = 0
while i < args.count {
    let a = args[i]
    func value() -> String { i += 1; guard i < args.count else { die("\(a) needs a value") }; return args[i] }
    switch a {
    case "--builtin":
        let n = value()
        guard let b = BuiltinScenario(rawValue: n) else { die("unknown built-in scenario '\(n)'; try 'mobility-sim list'") }
        builtins.append(b)
    case "-o", "--output": output = value()
    case "--broker": broker = value()
    case "--speed": speed = value()
    case "-h", "--help": print(usage); exit(0)
    default:
        if a.hasPrefix("-") { die("unknown option \(a)") }
        files.append(a)
    }
    i += 1
}

@MainActor func traffic() -> [TrafficRecord] {
    var timed: [TrafficGenerator.Timed] = []
    for b in builtins { timed += b.generator().generate() }
    var records = timed.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element.record)
    for f in files {
        guard let text = try? String(contentsOfFile: f, encoding: .utf8) else { die("cannot read \(f)", 1) }
        for (n, line) in text.split(separator: "\n").enumerated() {
            switch TrafficRecord.parse(Array(line.utf8)) {
            case .success(let r): records.append(r)
            case .failure(let e): die("\(f):\(n + 1): \(e)", 1)
            }
        }
    }
    return records
}

switch command {
case "list":
    for b in BuiltinScenario.allCases { print(b.rawValue) }
case "record":
    guard let output, !builtins.isEmpty else { die("record needs --builtin NAME and -o FILE") }
    let text = traffic().map(\.line).joined(separator: "\n") + "\n"
    do { try text.write(toFile: output, atomically: true, encoding: .utf8) } catch { die("cannot write \(output): \(error)", 1) }
case "play":
    guard let broker else { die("play needs --broker URL") }
    let records = traffic()
    guard !records.isEmpty else { die("nothing to play: give --builtin NAME or a traffic file") }
    let factor: Double? = speed == "max" ? nil : Double(speed.replacingOccurrences(of: "x", with: "").replacingOccurrences(of: "×", with: ""))
    if speed != "max", factor == nil || factor! <= 0 { die("--speed takes max or a positive factor") }
    do {
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: broker), clientID: "mobility-sim-\(getpid())")
        c.cleanSession = true
        let client = try MQTTClient(c, onMessage: { _, _ in })
        try client.start()
        let deadline = Date().addingTimeInterval(10)
        while !client.isConnected && Date() < deadline { usleep(10_000) }
        guard client.isConnected else { die("cannot connect to \(broker)", 1) }
        let began = Date()
        for (n, r) in records.enumerated() {
            if factor == nil {
                // Keep at most 500 unacknowledged messages in flight.
                while client.publishedCount - client.acknowledgedCount > 500 { usleep(200) }
            } else if n > 0 {
                usleep(UInt32(max(0, min(1_000_000, 1_000_000 / factor!))))
            }
            try client.publish(topic: r.topic, payload: r.payload, qos: 1)
        }
        let ackDeadline = Date().addingTimeInterval(30)
        while client.acknowledgedCount < records.count && Date() < ackDeadline { usleep(1000) }
        let secs = Date().timeIntervalSince(began)
        FileHandle.standardError.write(Data("mobility-sim: published \(records.count) messages (\(client.acknowledgedCount) acknowledged) in \(String(format: "%.2f", secs)) s\n".utf8))
        client.stop()
        exit(client.acknowledgedCount >= records.count ? 0 : 1)
    } catch {
        die("\(error)", 1)
    }
default:
    die("unknown command '\(command)'\n\n" + usage)
}
