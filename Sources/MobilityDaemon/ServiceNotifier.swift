import CSystemd
import Dispatch
import Glibc

/// Tells the service manager (systemd, `Type=notify`) what the daemon is doing, through
/// sd_notify(3): `READY=1` once it serves, `RELOADING=1` around a rule reload, `STOPPING=1`,
/// `STATUS=` lines for `systemctl status`, and `WATCHDOG=1` pings. Every call is a no-op when the
/// daemon was not started with `NOTIFY_SOCKET` (outside systemd). Status lines carry counts and
/// states, never health data.
final class ServiceNotifier: Sendable {
    /// The watchdog interval systemd asked for (`WATCHDOG_USEC`, for this process's pid), or nil.
    let watchdogMicroseconds: UInt64?

    init() {
        var usec: UInt64 = 0
        watchdogMicroseconds = sd_watchdog_enabled(0, &usec) > 0 && usec > 0 ? usec : nil
    }

    /// The daemon serves: state restored, subscribed, metrics listening.
    func ready(status: String) { send("READY=1\nSTATUS=\(status)") }

    /// A reload starts; `ready` ends it. systemd wants the monotonic clock of the request.
    func reloading(status: String) {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        let usec = UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1000
        send("RELOADING=1\nMONOTONIC_USEC=\(usec)\nSTATUS=\(status)")
    }

    /// A graceful stop has begun.
    func stopping(status: String) { send("STOPPING=1\nSTATUS=\(status)") }

    /// A one-line status for `systemctl status`.
    func status(_ s: String) { send("STATUS=\(s)") }

    /// Tells the watchdog the daemon is making progress.
    func watchdog() { send("WATCHDOG=1") }

    /// Pings the watchdog while the daemon starts (restoring a large state takes seconds), until
    /// cancelled; start-up itself is bounded by the unit's `TimeoutStartSec=`. Nil without a watchdog.
    func pingDuringStartup() -> DispatchSourceTimer? {
        guard let usec = watchdogMicroseconds else { return nil }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "mobilityd.startup-watchdog"))
        timer.schedule(deadline: .now(), repeating: .microseconds(Int(max(usec / 2, 1000))))
        timer.setEventHandler { [self] in watchdog() }
        timer.resume()
        return timer
    }

    private func send(_ message: String) { _ = sd_notify(0, message) }
}
