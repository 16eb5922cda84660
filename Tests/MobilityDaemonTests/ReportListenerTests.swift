import Foundation
import Glibc
import TestSupport
import Testing

/// The report listener as mobilityd runs it: refused where it would expose health data (exit 2
/// before anything starts), served over TLS with bearer tokens, each access logged by the
/// token's name without values.
@Suite(.serialized) struct ReportListenerTests {
    static let token = String(repeating: "c0ffee42", count: 8)

    /// A scratch directory with a tokens file (`mode`) and, when asked, the TLS material.
    static func scratch(tokensMode: mode_t = 0o600, tls: Bool = false) throws -> String {
        let dir = TemporaryPath.make("mw-reports")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try "# name:token\ncare-team:\(token)\n".write(toFile: dir + "/tokens", atomically: true, encoding: .utf8)
        chmod(dir + "/tokens", tokensMode)
        if tls {
            try TestCertificates.mint(dir)
            chmod(dir + "/server.key", 0o600)
        }
        return dir
    }

    /// Runs mobilityd with `arguments` and returns its exit code and output.
    static func refused(_ arguments: [String]) throws -> (Int32, String) {
        let d = try ChildProcess(ChildProcess.product("mobilityd"), ["--rules", RepoPaths.rules, "--state", TemporaryPath.make("mw-never")] + arguments)
        let code = d.wait(timeout: 15)
        return (code, d.log)
    }

    @Test func aListenerWithoutTokensIsRefusedEvenOnLoopback() throws {
        let (code, log) = try Self.refused(["--http-address", "127.0.0.1:9465"])
        #expect(code == 2)
        #expect(log.contains("the report listener on 127.0.0.1:9465 serves health data and needs --http-tokens FILE"), "\(log)")
    }

    @Test(arguments: ["0.0.0.0:9465", "192.0.2.10:9465"])
    func offLoopbackWithoutTLSIsRefused(address: String) throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, log) = try Self.refused(["--http-address", address, "--http-tokens", dir + "/tokens"])
        #expect(code == 2)
        #expect(log.contains("refusing to serve health data on \(address), which is not loopback, without TLS"), "\(log)")
    }

    @Test(arguments: [0o644, 0o640, 0o604] as [mode_t])
    func aTokensFileOthersCanReadIsRefused(mode: mode_t) throws {
        let dir = try Self.scratch(tokensMode: mode)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, log) = try Self.refused(["--http-address", "127.0.0.1:9465", "--http-tokens", dir + "/tokens"])
        #expect(code == 2)
        #expect(
            log.contains("http tokens file \(dir)/tokens holds bearer tokens but is accessible to group or others (mode 0\(String(mode, radix: 8)))"), "\(log)")
        #expect(!log.contains(Self.token))
    }

    @Test func aTLSKeyOthersCanReadIsRefused() throws {
        let dir = try Self.scratch(tls: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        chmod(dir + "/server.key", 0o644)
        let (code, log) = try Self.refused([
            "--http-address", "127.0.0.1:9465", "--http-tokens", dir + "/tokens",
            "--http-tls-cert", dir + "/server.crt", "--http-tls-key", dir + "/server.key"
        ])
        #expect(code == 2)
        #expect(log.contains("http TLS key \(dir)/server.key holds the private key but is accessible to group or others (mode 0644)"), "\(log)")
    }

    @Test func aBadTokensLineIsRefusedWithItsPosition() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "care-team:\(Self.token)\nward:short\n".write(toFile: dir + "/tokens", atomically: true, encoding: .utf8)
        chmod(dir + "/tokens", 0o600)
        let (code, log) = try Self.refused(["--http-address", "127.0.0.1:9465", "--http-tokens", dir + "/tokens"])
        #expect(code == 2)
        #expect(log.contains("http tokens file \(dir)/tokens:2: the token of 'ward' must be 32-512 characters"), "\(log)")
    }

    /// A key that is not the certificate's passes the file checks but not libmicrohttpd: a
    /// configuration error (2, which the unit does not restart), not a busy port (75).
    @Test func aKeyThatIsNotTheCertificatesExitsAsAConfigurationError() throws {
        let dir = try Self.scratch(tls: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        chmod(dir + "/ca.key", 0o600)
        let state = dir + "/state"
        let (code, log) = try Self.refused([
            "--state", state, "--http-address", "127.0.0.1:0", "--http-tokens", dir + "/tokens",
            "--http-tls-cert", dir + "/server.crt", "--http-tls-key", dir + "/ca.key"
        ])
        #expect(code == 2, "\(log)")
        #expect(log.contains("cannot serve reports"), "\(log)")
        #expect(log.contains("check that the certificate and the key are PEM and belong together"))
    }

    /// Over TLS on loopback: no token 401, a wrong one 401, the right one 200; the access log
    /// names the token, not the token, and holds no path parameter and no query value.
    @Test func theStatusNeedsTheTokenAndEveryAccessIsLoggedWithoutValues() throws {
        let dir = try Self.scratch(tls: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let broker = try MosquittoBroker()
        let port = try freePort()
        let daemon = try DaemonUnderTest(
            broker: broker,
            extra: [
                "--http-address", "127.0.0.1:\(port)", "--http-tokens", dir + "/tokens",
                "--http-tls-cert", dir + "/server.crt", "--http-tls-key", dir + "/server.key"
            ])
        defer { daemon.process.stop() }
        let url = "https://127.0.0.1:\(port)/api/v1/status"
        let ca = dir + "/ca.crt"
        let none = try Curl.get(url, caFile: ca)
        #expect(none.status == 401, "\(none.log)")
        #expect(none.headers["www-authenticate"] == "Bearer realm=\"mobilityd\"")
        let wrong = try Curl.get(url, headers: ["Authorization: Bearer " + String(Self.token.reversed())], caFile: ca)
        #expect(wrong.status == 401)
        let right = try Curl.get(url, headers: ["Authorization: Bearer \(Self.token)"], caFile: ca)
        #expect(right.status == 200)
        #expect(right.body.hasPrefix(#"{"status":"success","data":{"instance":"mobilityd","users":0,"shards":"#), "\(right.body)")
        #expect(right.headers["cache-control"] == "no-store")
        let withQuery = try Curl.get(url + "?week=2026-W10", headers: ["Authorization: Bearer \(Self.token)"], caFile: ca)
        #expect(withQuery.status == 400)
        #expect(withQuery.body.contains("\"errorType\":\"bad_data\""))
        let unknown = try Curl.get(
            "https://127.0.0.1:\(port)/api/v1/users/jamie-7/nothing?week=2026-W11", headers: ["Authorization: Bearer \(Self.token)"], caFile: ca)
        #expect(unknown.status == 404)
        // The metrics listener is another port and stays open to Prometheus without a token.
        #expect(httpGet(port: daemon.metricsPort, path: "/metrics")?.status == 200)

        #expect(eventually(timeout: 5) { daemon.process.log.components(separatedBy: "msg=\"http access\"").count - 1 == 5 }, "\(daemon.process.log)")
        let access = daemon.process.log.split(separator: "\n").filter { $0.contains("msg=\"http access\"") }
        #expect(access.count == 5)
        #expect(access[0].contains("token=- method=GET route=/api/v1/status query=- status=401"), "\(access[0])")
        #expect(access[1].contains("token=- method=GET route=/api/v1/status query=- status=401"))
        #expect(
            access[2].contains("token=care-team method=GET route=/api/v1/status query=- status=200 bytes=\(right.body.utf8.count) peer=127.0.0.1 tls=true"),
            "\(access[2])")
        #expect(access[3].contains("token=care-team method=GET route=/api/v1/status query=- status=400"))
        #expect(access[4].contains("token=- method=GET route=- query=- status=404"))
        let log = daemon.process.log
        #expect(!log.contains(Self.token))
        #expect(!log.contains("2026-W1") && !log.contains("jamie-7"))
        #expect(log.contains("http=https://127.0.0.1:\(port)"))
    }
}
