import Foundation
import MobilityModel

/// The clocks a shard reads, passed in so that a test can set them: the wall clock (for the
/// engine's "now" in wall-clock mode, silences and command times) and a monotonic clock (batch
/// durations, commit and acknowledgement intervals, the stall bound).
struct DaemonClock: Sendable {
    /// Milliseconds since the epoch.
    var wall: @Sendable () -> Timestamp
    /// Monotonic nanoseconds (uptime); only differences mean anything.
    var uptimeNanoseconds: @Sendable () -> UInt64

    /// The system's clocks.
    static let system = DaemonClock(wall: { Daemon.wallNow() }, uptimeNanoseconds: { DispatchTime.now().uptimeNanoseconds })
}
