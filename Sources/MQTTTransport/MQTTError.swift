import CMosquitto

/// An error from the MQTT layer, with libmosquitto's code mapped in one place.
package struct MQTTError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What failed.
    package enum Code: Hashable, Sendable {
        /// A libmosquitto return code (`MOSQ_ERR_*`).
        case library(Int32)
        /// The broker refused the connection (CONNACK / reason code).
        case refused(Int32)
        /// A bad broker URL or option.
        case configuration
    }

    /// What failed: a libmosquitto code, a refusal by the broker, or a bad configuration.
    package let code: Code
    /// A readable explanation, with libmosquitto's own text where there is one.
    package let message: String
    /// The `#fileID` where the error was made.
    package let file: String
    /// The line where the error was made.
    package let line: UInt

    init(_ code: Code, _ message: String, file: String = #fileID, line: UInt = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }

    /// An error for a libmosquitto return code, described by `mosquitto_strerror`.
    static func library(_ rc: Int32, _ what: String, file: String = #fileID, line: UInt = #line) -> MQTTError {
        MQTTError(.library(rc), "\(what): \(String(cString: mosquitto_strerror(rc)))", file: file, line: line)
    }

    /// A refused connection, described by `mosquitto_connack_string` or `mosquitto_reason_string`.
    static func refused(_ rc: Int32, v5: Bool) -> MQTTError {
        var m = "connection refused: " + String(cString: v5 ? mosquitto_reason_string(rc) : mosquitto_connack_string(rc))
        if (v5 && rc == 132) || (!v5 && rc == 1) {
            m += v5 ? " (the broker does not speak MQTT 5; use MQTT 3.1.1)" : " (the broker does not speak MQTT 3.1.1; use MQTT 5)"
        }
        return MQTTError(.refused(rc), m)
    }

    /// An MQTT 5 reason code as text (`mosquitto_reason_string`), e.g. 135: "Not authorized".
    package static func reasonDescription(_ code: Int32) -> String { String(cString: mosquitto_reason_string(code)) }

    static func configuration(_ m: String, file: String = #fileID, line: UInt = #line) -> MQTTError {
        MQTTError(.configuration, m, file: file, line: line)
    }

    /// The message.
    package var description: String { message }

    /// Equal when code and message are equal (where it was made is not compared).
    package static func == (a: MQTTError, b: MQTTError) -> Bool { a.code == b.code && a.message == b.message }
    /// Hashes the code and message (consistent with `==`).
    package func hash(into h: inout Hasher) { h.combine(code); h.combine(message) }
}
