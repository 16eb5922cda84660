import CNATS
import Foundation

/// Why the broker could not be read or consumed over the NATS protocol: what was being done, and
/// libnats's reason.
package struct JetStreamFailure: Error, CustomStringConvertible {
    package let description: String
    /// Whether the server did not answer in time (a request made again may succeed: a leader
    /// being elected), rather than refused it or the connection being closed.
    package let timedOut: Bool

    /// A failure described by `description`.
    package init(description: String, timedOut: Bool = false) {
        self.description = description
        self.timedOut = timedOut
    }

    /// Throws unless `status` is `NATS_OK`: `what` was being done, followed by libnats's last
    /// error of this thread when it is of this status (else the status's text: a wait that timed
    /// out, say, leaves its error behind, and libnats has no public way to clear it).
    static func check(_ status: natsStatus, _ what: String) throws(JetStreamFailure) {
        guard status != NATS_OK else { return }
        var reason = String(cString: natsStatus_GetText(status))
        var lastStatus = NATS_OK
        if let last = nats_GetLastError(&lastStatus), lastStatus == status, strlen(last) > 0 { reason = String(cString: last) }
        throw JetStreamFailure(description: "\(what): \(reason)", timedOut: status == NATS_TIMEOUT)
    }
}
