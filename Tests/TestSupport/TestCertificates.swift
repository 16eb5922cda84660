import Foundation

/// Throwaway TLS material minted with `openssl` for a test: a CA and a server certificate for
/// 127.0.0.1 and 127.0.0.2 (used by mosquitto's and mobilityd's TLS listeners in tests).
package enum TestCertificates {
    /// Writes `ca.crt`, `ca.key`, `server.crt` and `server.key` (and working files) into `dir`.
    package static func mint(_ dir: String) throws {
        let ssl = "/usr/bin/openssl"
        try run(
            ssl,
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=MobilityWatch test CA",
                "-keyout", dir + "/ca.key", "-out", dir + "/ca.crt"
            ])
        try run(ssl, ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.2", "-keyout", dir + "/server.key", "-out", dir + "/server.csr"])
        try "subjectAltName=IP:127.0.0.1,IP:127.0.0.2\n".write(toFile: dir + "/san.ext", atomically: true, encoding: .utf8)
        try run(
            ssl,
            [
                "x509", "-req", "-in", dir + "/server.csr", "-CA", dir + "/ca.crt", "-CAkey", dir + "/ca.key", "-CAcreateserial",
                "-days", "2", "-extfile", dir + "/san.ext", "-out", dir + "/server.crt"
            ])
    }

    /// Runs a tool to completion; throws with its output when it fails.
    package static func run(_ tool: String, _ args: [String]) throws {
        let p = try ChildProcess(tool, args)
        guard p.wait() == 0 else { throw HarnessError("\(tool) \(args.joined(separator: " ")) failed: \(p.log)") }
    }
}
