import Foundation
import MobilityModel

/// The clocks the daemon reads (its shards and desks, the partition supervisor's heartbeats and
/// lease bound), passed in so that a test can set them: the wall clock (for the
/// engine's "now" in wall-clock mode, silences and command times) and a monotonic clock (batch
/// durations, commit and acknowledgement intervals, the stall bound).
package struct DaemonClock: Sendable {
    /// Milliseconds since the epoch.
    package var wall: @Sendable () -> Timestamp
    /// Monotonic nanoseconds (uptime); only differences mean anything.
    package var uptimeNanoseconds: @Sendable () -> UInt64

    /// The system's clocks.
    package static let system = DaemonClock(wall: { Daemon.wallNow() }, uptimeNanoseconds: { DispatchTime.now().uptimeNanoseconds })
}
