import Foundation
import Glibc
import HTTPEndpoint
import TestSupport
import Testing

/// `/healthz` and `/metrics` of a real mobilityd under many idle connections, and the address it reports.
@Suite(.serialized) struct MetricsEndpointTests {
    /// `GET path` with a receive deadline, so a server that never answers fails the test instead of hanging it.
    static func get(host: String = "127.0.0.1", port: Int, path: String, deadline: Int = 5) -> (status: Int, body: String)? {
        guard let fd = LoopbackHTTP.connect(host: host, port: port) else { return nil }
        var tv = timeval(tv_sec: deadline, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        return LoopbackHTTP.exchange(fd: fd, path: path)
    }

    /// Raises this process's soft descriptor limit to at least `n` (within the hard limit).
    static func raiseDescriptorLimit(to n: rlim_t) throws {
        var rl = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &rl)
        guard rl.rlim_cur < n else { return }
        guard rl.rlim_max >= n else { throw HarnessError("RLIMIT_NOFILE hard limit \(rl.rlim_max) is below \(n)") }
        rl.rlim_cur = n
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &rl)
    }

    @Test func healthzAnswersWith1100IdleConnectionsOpen() throws {
        try Self.raiseDescriptorLimit(to: 4096)
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker)
        // 1 100 connections that send nothing: with select(2) every descriptor past 1 023 was
        // refused, and so was every new request.
        var idle: [Int32] = []
        defer { idle.forEach { close($0) } }
        for _ in 0..<1100 {
            guard let fd = LoopbackHTTP.connect(port: daemon.metricsPort) else { break }
            idle.append(fd)
        }
        #expect(idle.count == 1100)
        let started = Date()
        let r = Self.get(port: daemon.metricsPort, path: "/healthz")
        #expect(r?.status == 200 && r?.body == "ok\n", "got \(String(describing: r)) in \(Date().timeIntervalSince(started)) s")
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(Self.get(port: daemon.metricsPort, path: "/metrics")?.status == 200)
        #expect(daemon.process.isRunning)
    }

    @Test func startedLineShowsTheBoundAddress() throws {
        let broker = try MosquittoBroker()
        // Port 0 on another loopback address: the log must say which host and port it got.
        let p = try ChildProcess(
            ChildProcess.product("mobilityd"),
            [
                "--broker", broker.url, "--rules", RepoPaths.rules, "--state", TemporaryPath.make("mw-state"),
                "--metrics-address", "127.0.0.2:0"
            ])
        #expect(eventually { p.log.contains("msg=started") })
        let line = try #require(p.log.split(separator: "\n").first { $0.contains("msg=started") })
        let field = try #require(line.split(separator: " ").first { $0.hasPrefix("metrics=") }).dropFirst("metrics=".count)
        let parts = field.split(separator: ":")
        #expect(parts.count == 2 && parts[0] == "127.0.0.2", "\(line)")
        let port = try #require(Int(parts.last ?? ""))
        #expect(port > 0)
        #expect(Self.get(host: "127.0.0.2", port: port, path: "/healthz") != nil)
        #expect(p.stop() == 0)
    }
}
