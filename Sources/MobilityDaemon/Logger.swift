import Foundation
import MobilityModel
import Synchronization

/// Log line formats.
package enum LogFormat: String, Sendable { case logfmt, json }

/// Log levels, in order.
package enum LogLevel: Int, Comparable, Sendable {
    case debug, info, warn, error

    init?(name: String) {
        switch name {
        case "debug": self = .debug
        case "info": self = .info
        case "warn", "warning": self = .warn
        case "error": self = .error
        default: return nil
        }
    }

    var name: String { ["debug", "info", "warn", "error"][rawValue] }

    /// Orders levels from the most verbose to the most severe.
    package static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
}

/// Structured logs to stderr, one line per event. Health data (sample values, notes) is never
/// logged at info level or above: callers pass ids and counts only.
package final class Logger: Sendable {
    let format: LogFormat
    let minimum: LogLevel
    private let lock = Mutex<Void>(())

    package init(format: LogFormat, level: LogLevel) {
        self.format = format
        self.minimum = level
    }

    /// Logs an event with fields.
    package func log(_ level: LogLevel, _ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        guard level >= minimum else { return }
        log(level, message, pairs: fields.map { ($0.key, $0.value) })
    }

    /// Logs an event with fields built at run time.
    package func log(_ level: LogLevel, _ message: String, pairs fields: [(String, String)]) {
        guard level >= minimum else { return }
        let ts = Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
        var line: String
        switch format {
        case .logfmt:
            line = "ts=\(ts) level=\(level.name) msg=\(Logger.logfmt(message))"
            for (k, v) in fields { line += " \(k)=\(Logger.logfmt(v))" }
        case .json:
            line = "{\"ts\":\"\(ts)\",\"level\":\"\(level.name)\",\"msg\":"
            JSONWriter.quote(message, into: &line)
            for (k, v) in fields { line += ",\"\(k)\":"; JSONWriter.quote(v, into: &line) }
            line += "}"
        }
        line += "\n"
        lock.withLock { _ in FileHandle.standardError.write(Data(line.utf8)) }
    }

    /// Logs at debug level.
    package func debug(_ m: String, _ f: KeyValuePairs<String, String> = [:]) { log(.debug, m, f) }
    /// Logs at info level.
    package func info(_ m: String, _ f: KeyValuePairs<String, String> = [:]) { log(.info, m, f) }
    /// Logs at warn level.
    package func warn(_ m: String, _ f: KeyValuePairs<String, String> = [:]) { log(.warn, m, f) }
    /// Logs at error level.
    package func error(_ m: String, _ f: KeyValuePairs<String, String> = [:]) { log(.error, m, f) }

    static func logfmt(_ s: String) -> String {
        if !s.isEmpty, !s.contains(where: { $0 == " " || $0 == "=" || $0 == "\"" || $0 == "\n" }) { return s }
        return "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
            + "\""
    }

}
