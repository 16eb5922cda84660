import Foundation

/// A real HTTP(S) client for tests: `curl` as a child process.
package enum Curl {
    /// What came back: the status (0 when no HTTP exchange happened, e.g. a failed handshake),
    /// the headers (names in lower case), the body and curl's own messages.
    package struct Result: Sendable {
        /// The status, or 0.
        package var status: Int
        /// Response headers, lower-cased names.
        package var headers: [String: String]
        /// The body as text.
        package var body: String
        /// curl's exit code.
        package var exitCode: Int32
        /// curl's stderr and the `-w` line.
        package var log: String
    }

    /// `curl URL` with `headers` (`Name: value`), trusting `caFile` when given, plus `extra` arguments.
    package static func get(_ url: String, headers: [String] = [], caFile: String? = nil, extra: [String] = []) throws -> Result {
        let dir = TemporaryPath.make("mw-curl")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var args = ["-s", "-S", "--max-time", "10", "-o", dir + "/body", "-D", dir + "/headers", "-w", "status=%{http_code}\n"]
        if let caFile { args += ["--cacert", caFile] }
        for h in headers { args += ["-H", h] }
        args += extra + [url]
        let p = try ChildProcess("/usr/bin/curl", args)
        let code = p.wait(timeout: 20)
        let log = p.log
        let status = log.split(separator: "\n").last { $0.hasPrefix("status=") }.flatMap { Int($0.dropFirst(7)) } ?? 0
        var hs: [String: String] = [:]
        let headerText = (try? String(contentsOfFile: dir + "/headers", encoding: .utf8)) ?? ""
        for line in headerText.split(separator: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            hs[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let body = (try? String(contentsOfFile: dir + "/body", encoding: .utf8)) ?? ""
        return Result(status: status, headers: hs, body: body, exitCode: code, log: log)
    }

    /// `curl -X POST URL` with `body` (from a file, sent as is) and `contentType`, plus `headers`.
    package static func post(
        _ url: String, body: [UInt8], contentType: String? = "application/json", headers: [String] = [], caFile: String? = nil
    ) throws -> Result {
        let dir = TemporaryPath.make("mw-curl-body")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data(body).write(to: URL(fileURLWithPath: dir + "/body"))
        return try get(
            url, headers: headers + (contentType.map { ["Content-Type: \($0)"] } ?? []), caFile: caFile,
            extra: ["-X", "POST", "--data-binary", "@" + dir + "/body"])
    }

    /// ``post(_:body:contentType:headers:)`` of a text.
    package static func post(_ url: String, json: String, headers: [String] = []) throws -> Result {
        try post(url, body: Array(json.utf8), headers: headers)
    }
}
