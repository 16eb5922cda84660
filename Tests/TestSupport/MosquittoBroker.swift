import Foundation
import Glibc
import HTTPEndpoint
import Synchronization

/// A real mosquitto broker on a free loopback port, for integration tests. Stopped on deinit.
package final class MosquittoBroker: @unchecked Sendable {
    /// The port it listens on (kept across restarts).
    package let port: Int
    /// Its working directory (config, persistence, log).
    package let directory: String
    private var process: ChildProcess?
    private let lock = NSLock()

    /// `mqtt://127.0.0.1:PORT`.
    package var url: String { "mqtt://127.0.0.1:\(port)" }

    /// Writes a config and starts the broker.
    /// - Parameters:
    ///   - stockQueueLimits: keep mosquitto's own queue limits (1000 messages per offline
    ///     session), which drop messages silently, instead of lifting them.
    ///   - sysInterval: how often `$SYS` topics are published (mosquitto's default: 10 s).
    package init(persistence: Bool = false, autosaveSeconds: Int = 1, stockQueueLimits: Bool = false, sysInterval: Int? = nil) throws {
        port = try freePort()
        directory = TemporaryPath.make("mw-broker")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var conf = """
            listener \(port) 127.0.0.1
            allow_anonymous true
            log_dest file \(directory)/mosquitto.log
            """
        if !stockQueueLimits { conf += "\nmax_queued_messages 0\nmax_inflight_messages 0" }
        if let sysInterval { conf += "\nsys_interval \(sysInterval)" }
        if getuid() == 0 { conf += "\nuser root" }
        if persistence { conf += "\npersistence true\npersistence_location \(directory)/\nautosave_interval \(autosaveSeconds)" }
        try (conf + "\n").write(toFile: directory + "/mosquitto.conf", atomically: true, encoding: .utf8)
        try start()
    }

    /// Starts (or restarts) the broker and waits until it accepts connections.
    package func start() throws {
        let p = try ChildProcess(MosquittoBroker.binary, ["-c", directory + "/mosquitto.conf"], logPath: directory + "/stdout.log")
        lock.withLock { process = p }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if canConnect(port: port) { return }
            if !p.isRunning { break }
            usleep(20_000)
        }
        throw HarnessError("mosquitto did not start on port \(port); see \(directory)/mosquitto.log")
    }

    /// Sends `signal` to the broker (SIGSTOP pauses it: its connections stay open and it answers
    /// nothing until SIGCONT).
    package func signal(_ signal: Int32) { lock.withLock { process }?.signal(signal) }

    /// Stops the broker with a signal (SIGTERM saves persistence; SIGKILL does not) and waits.
    package func stop(signal: Int32 = SIGTERM) {
        guard
            let p = lock.withLock({ () -> ChildProcess? in
                let p = process; process = nil; return p
            })
        else { return }
        p.stop(signal: signal)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    static let binary: String =
        ["/usr/sbin/mosquitto", "/usr/bin/mosquitto", "/usr/local/sbin/mosquitto"]
        .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "mosquitto"
}

/// A harness failure.
package struct HarnessError: Error, CustomStringConvertible {
    /// What went wrong in the harness, e.g. a product that is not built.
    package let description: String
    /// Creates a harness error with its description.
    package init(_ d: String) { description = d }
}

/// Ports `freePort()` has handed out in this test process: never twice, so that a port a test
/// lets go for a while (a broker or NATS node it killed and restarts on the same ports) is not
/// given to a test running beside it meanwhile (another test's NATS node there would take the
/// restarted node's clients, and the routes of the first cluster's nodes).
private let handedOutPorts = Mutex<Set<Int>>([])

/// A TCP port on 127.0.0.1 that was free a moment ago and that no other caller in this process
/// has been given. Chosen below the kernel's ephemeral range (outgoing connections take their
/// source ports from that range, so none can take a listener's port while it is down).
package func freePort() throws -> Int {
    let low = ephemeralPortRangeStart()
    if low > 12_000 {
        for _ in 0..<500 {
            let p = Int.random(in: 10_000..<low)
            guard handedOutPorts.withLock({ $0.insert(p).inserted }) else { continue }
            if (try? bindLoopback(port: p)) == p { return p }
        }
    }
    for _ in 0..<500 {
        let p = try bindLoopback(port: 0)
        if handedOutPorts.withLock({ $0.insert(p).inserted }) { return p }
    }
    throw HarnessError("no free loopback port found")
}

/// The first port of the kernel's ephemeral range (`ip_local_port_range`; Linux's default 32768).
func ephemeralPortRangeStart() -> Int {
    let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
    return text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap { Int($0) } ?? 32_768
}

/// Binds a TCP socket to 127.0.0.1:`port` (0: any) and closes it; the port it got.
func bindLoopback(port: Int) throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket failed") }
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = UInt16(port).bigEndian
    let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard rc == 0 else { throw HarnessError("bind failed") }
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// Whether something accepts TCP connections on 127.0.0.1:port.
package func canConnect(port: Int) -> Bool {
    guard let fd = LoopbackHTTP.connect(port: port) else { return false }
    close(fd)
    return true
}

/// Whether something accepts TCP connections on `host` (an IPv4 literal), port.
package func canConnect(host: String, port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr(host)
    addr.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

/// Polls a condition until it holds or the timeout passes.
package func eventually(timeout: TimeInterval = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}

/// A plain HTTP/1.0 GET against 127.0.0.1, returning status and body (nil when nothing answers).
package func httpGet(port: Int, path: String) -> (status: Int, body: String)? { LoopbackHTTP.get(port: port, path: path) }

/// Parses Prometheus text into `name{labels}` → value, checking every line's syntax.
package func parsePrometheus(_ text: String) throws -> [String: Double] {
    var out: [String: Double] = [:]
    for line in text.split(separator: "\n") {
        if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") { continue }
        guard let space = line.lastIndex(of: " ") else { throw HarnessError("bad metrics line: \(line)") }
        let key = String(line[..<space]), value = line[line.index(after: space)...]
        let nameEnd = key.firstIndex(of: "{") ?? key.endIndex
        let name = key[..<nameEnd]
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" }),
            nameEnd == key.endIndex || key.hasSuffix("}"), let v = Double(value)
        else {
            throw HarnessError("bad metrics line: \(line)")
        }
        out[key] = v
    }
    return out
}
