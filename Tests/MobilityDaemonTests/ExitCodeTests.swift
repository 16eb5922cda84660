import Foundation
import Glibc
import TestSupport
import Testing

/// Exit codes the systemd unit relies on (`RestartPreventExitStatus=1 2`).
@Suite(.serialized) struct ExitCodeTests {
    /// A metrics port still held (by the instance stopping before this one) is worth a restart:
    /// 75 (EX_TEMPFAIL), not 1, which the unit would never restart.
    @Test func aMetricsPortInUseExitsTempfail() throws {
        let broker = try MosquittoBroker()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        try #require(
            withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
                == 0)
        try #require(listen(fd, 1) == 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        let port = Int(UInt16(bigEndian: addr.sin_port))
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let daemon = try ChildProcess(
            ChildProcess.product("mobilityd"),
            [
                "--broker", broker.url, "--rules", RepoPaths.rules, "--state", state, "--metrics-address", "127.0.0.1:\(port)"
            ])
        #expect(daemon.wait(timeout: 15) == 75, "\(daemon.log)")
        #expect(daemon.log.contains("cannot serve metrics"))
    }
}
