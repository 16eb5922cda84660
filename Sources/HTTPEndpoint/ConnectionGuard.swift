import Dispatch
import Glibc
import Synchronization

/// Keeps slow clients from holding the listener's connections: a request must arrive whole (its
/// line, headers and body) within ``requestDeadline`` of the connection opening or of the previous
/// response, however slowly its bytes trickle in (libmicrohttpd's own timeout only measures
/// silence, which one byte every few seconds resets); one IP address has at most
/// ``perAddress`` connections, and when the connections near the limit, a new one closes the
/// connection that has waited longest for its request (of its address, or of all), so that a client
/// which sends its request at once is always let in (slowloris).
///
/// The per-address cap closes the address's longest-waiting connection rather than refusing the
/// newcomer (libmicrohttpd's `MHD_OPTION_PER_IP_CONNECTION_LIMIT`): on loopback every local
/// client has the same address, and refusing newcomers let one of them lock out the rest (1 100
/// idle connections from 127.0.0.1 made `/healthz` fail).
///
/// libmicrohttpd tells the guard when a connection opens and closes (its thread), and the server
/// when a request has arrived and when its response is done. A connection is closed by
/// `shutdown(2)` of its socket, which libmicrohttpd then sees as the peer's end and closes as
/// usual. That is safe from the guard's own thread because the guard's lock is held around it and
/// libmicrohttpd reports a connection closed (which takes the same lock) before it closes the
/// descriptor: a socket the guard shuts down is always still that connection's.
final class ConnectionGuard: Sendable {
    /// How long a request may take to arrive, in seconds.
    let requestDeadline: Double
    /// Once this many connections are open, each new one closes the longest-waiting idle one.
    let evictAbove: Int
    /// The most connections one IP address keeps: a new one past it closes that address's
    /// longest-waiting connection.
    let perAddress: Int

    private struct Entry {
        var fd: Int32
        var address: UInt32
        /// Since when the connection has waited for a request (nil: one is being answered).
        var waitingSince: UInt64?
        var closing = false
    }
    private struct State {
        var entries: [Int: Entry] = [:]
        var byAddress: [UInt32: Int] = [:]
        var nextID = 1
        var closedForDeadline = 0
        var closedForRoom = 0
    }
    private let state = Mutex(State())
    private let stopped = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)

    /// A guard for a listener of at most `connectionLimit` connections, `perAddress` from one
    /// address; checks deadlines every quarter of a second.
    init(requestDeadline: Double, connectionLimit: Int, perAddress: Int) {
        self.requestDeadline = requestDeadline
        self.perAddress = max(1, perAddress)
        // Room for newcomers: 1/8 of the limit, at most 64 (never all of a small limit).
        evictAbove = max(1, connectionLimit - min(64, max(1, connectionLimit / 8)))
        DispatchQueue(label: "http-connection-guard").async { [self] in
            while !stopped.load(ordering: .acquiring) {
                _ = wake.wait(timeout: .now() + .milliseconds(250))
                closeLate()
            }
        }
    }

    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// A connection opened on socket `fd` from IPv4 `address` (network order; 0 when unknown):
    /// returns its id (libmicrohttpd keeps it as the connection's socket context). Past the
    /// address's share, its connection that has waited longest for a request is closed; near the
    /// limit, the longest-waiting of all.
    func opened(fd: Int32, address: UInt32) -> Int {
        let now = Self.now()
        return state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            s.entries[id] = Entry(fd: fd, address: address, waitingSince: now)
            s.byAddress[address, default: 0] += 1
            if s.byAddress[address]! > perAddress { Self.closeLongestWaiting(&s, except: id, from: address) }
            if s.entries.count > evictAbove { Self.closeLongestWaiting(&s, except: id, from: nil) }
            return id
        }
    }

    /// Shuts down the connection (of `address`, or any) that has waited longest for its request.
    private static func closeLongestWaiting(_ s: inout State, except id: Int, from address: UInt32?) {
        var oldest: (id: Int, since: UInt64)?
        for (k, e) in s.entries where k != id && !e.closing && (address == nil || e.address == address) {
            if let since = e.waitingSince, since < oldest?.since ?? .max { oldest = (k, since) }
        }
        guard let oldest else { return }
        s.entries[oldest.id]!.closing = true
        s.closedForRoom += 1
        shutdown(s.entries[oldest.id]!.fd, Int32(SHUT_RDWR))
    }

    /// Connection `id`'s request has arrived whole: it is answered, not waited for.
    func requestArrived(_ id: Int) { state.withLock { $0.entries[id]?.waitingSince = nil } }

    /// Connection `id`'s response is done: the next request's deadline starts now.
    func responseDone(_ id: Int) {
        let now = Self.now()
        state.withLock { $0.entries[id]?.waitingSince = now }
    }

    /// Connection `id` closed (before libmicrohttpd closes its socket).
    func closed(_ id: Int) {
        state.withLock { s in
            guard let e = s.entries.removeValue(forKey: id) else { return }
            let left = s.byAddress[e.address, default: 1] - 1
            s.byAddress[e.address] = left > 0 ? left : nil
        }
    }

    /// Closes the connections whose request is later than the deadline.
    private func closeLate() {
        let limit = Self.now() &- UInt64(requestDeadline * 1_000_000_000)
        state.withLock { s in
            for (k, e) in s.entries where !e.closing {
                guard let since = e.waitingSince, since < limit else { continue }
                s.entries[k]!.closing = true
                s.closedForDeadline += 1
                shutdown(e.fd, Int32(SHUT_RDWR))
            }
        }
    }

    /// Connections closed so far for missing the deadline, and to make room.
    var closedCounts: (deadline: Int, room: Int) { state.withLock { ($0.closedForDeadline, $0.closedForRoom) } }

    /// Stops checking (before the server stops; the checking thread ends within a moment).
    func stop() {
        stopped.store(true, ordering: .releasing)
        wake.signal()
    }
}
