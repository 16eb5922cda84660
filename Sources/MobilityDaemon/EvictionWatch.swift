/// Tells an eviction loop from an ordinary reconnect, for one connection (a role).
///
/// A broker closes a connection when another one logs in with its client id. Two connections
/// that share a client id (both of mobilityd's under one account at a broker that binds client
/// ids to usernames, or a second daemon with the same `--client-id`) evict each other each time
/// one reconnects, about every second; a clean session among them wipes the persistent session
/// and the inputs queued in it, which the broker had acknowledged to the gateways. So: a
/// connection the broker closes within ``shortConnectionNs`` of accepting it is an eviction, and
/// ``loopAfter`` evictions in a row are a loop, which lasts until a connection stays up for
/// ``stableNs``. A state machine in the house style: the daemon reports connection events and
/// the time, and performs the actions (log, `/healthz`) it gets back.
struct EvictionWatch: Sendable {
    /// A connection the broker closes sooner than this after accepting it was evicted.
    static let shortConnectionNs: UInt64 = 10_000_000_000
    /// Evictions in a row that make a loop.
    static let loopAfter = 3
    /// A connection up this long ends a loop.
    static let stableNs: UInt64 = 30_000_000_000

    /// What the daemon does after an event.
    enum Action: Equatable, Sendable {
        case none
        /// A loop began: log it loudly (`/healthz` fails while ``isLooping``).
        case loopStarted(inARow: Int, sessionsLost: Int)
        /// The connection has stayed up: the loop is over.
        case loopEnded
    }

    /// When the current connection was accepted (uptime ns); nil while disconnected.
    private var connectedAt: UInt64?
    /// Evictions since the last connection that lasted, and the sessions lost among their reconnects.
    private(set) var inARow = 0
    private var sessionsLostInARow = 0
    /// Every eviction so far (the metric).
    private(set) var evictions = 0
    /// Whether the connection is in an eviction loop now.
    private(set) var isLooping = false

    /// The broker accepted the connection; `sessionLost`: it had no session for a persistent one.
    mutating func connected(now: UInt64, sessionLost: Bool) -> Action {
        connectedAt = now
        if sessionLost { sessionsLostInARow += 1 }
        return .none
    }

    /// The connection ended; `requested`: by mobilityd itself (a stop), which is no eviction.
    mutating func disconnected(now: UInt64, requested: Bool) -> Action {
        guard let since = connectedAt else { return .none }
        connectedAt = nil
        if requested { return .none }
        guard now &- since < EvictionWatch.shortConnectionNs else {
            inARow = 0
            sessionsLostInARow = 0
            return .none
        }
        evictions += 1
        inARow += 1
        guard inARow >= EvictionWatch.loopAfter, !isLooping else { return .none }
        isLooping = true
        return .loopStarted(inARow: inARow, sessionsLost: sessionsLostInARow)
    }

    /// Called on every health check: a loop ends once a connection has stayed up ``stableNs``.
    mutating func check(now: UInt64) -> Action {
        guard isLooping, let since = connectedAt, now &- since >= EvictionWatch.stableNs else { return .none }
        isLooping = false
        inARow = 0
        sessionsLostInARow = 0
        return .loopEnded
    }
}
