import Testing

@testable import MobilityDaemon

/// The eviction watch as events in, actions out: no broker, no clock.
@Suite struct EvictionWatchTests {
    static let s: UInt64 = 1_000_000_000

    /// One event (at `at` seconds) and what the watch must answer.
    enum Step: CustomStringConvertible, Sendable {
        case connected(at: UInt64, sessionLost: Bool = false)
        case dropped(at: UInt64, requested: Bool = false, expect: EvictionWatch.Action = .none)
        case check(at: UInt64, expect: EvictionWatch.Action = .none)
        /// Whether the watch says the connection is looping now.
        case looping(Bool)

        var description: String {
            switch self {
            case .connected(let at, let lost): "connected(at: \(at) s, sessionLost: \(lost))"
            case .dropped(let at, let r, let e): "dropped(at: \(at) s, requested: \(r)) → \(e)"
            case .check(let at, let e): "check(at: \(at) s) → \(e)"
            case .looping(let b): "looping \(b)"
            }
        }
    }

    static func run(_ steps: [Step]) -> EvictionWatch {
        var w = EvictionWatch()
        for step in steps {
            switch step {
            case .connected(let at, let lost): #expect(w.connected(now: at * s, sessionLost: lost) == .none, "\(step)")
            case .dropped(let at, let r, let e): #expect(w.disconnected(now: at * s, requested: r) == e, "\(step)")
            case .check(let at, let e): #expect(w.check(now: at * s) == e, "\(step)")
            case .looping(let b): #expect(w.isLooping == b, "\(step)")
            }
        }
        return w
    }

    /// Two connections under one client id, each taking it back a second later: the third
    /// eviction in a row is a loop (with the sessions the reconnects found wiped), which ends once
    /// a connection stays up for 30 s.
    @Test func evictionsEverySecondAreALoopUntilAConnectionLasts() {
        let w = Self.run([
            .connected(at: 100), .dropped(at: 101), .looping(false),
            .connected(at: 102, sessionLost: true), .dropped(at: 103),
            .connected(at: 104, sessionLost: true), .dropped(at: 105, expect: .loopStarted(inARow: 3, sessionsLost: 2)), .looping(true),
            .connected(at: 106, sessionLost: true), .dropped(at: 107), .looping(true),  // said once
            .connected(at: 108), .check(at: 120), .looping(true), .check(at: 138, expect: .loopEnded), .looping(false),
            .check(at: 200)
        ])
        #expect(w.evictions == 4)
    }

    /// Ordinary reconnects are no loop: a broker restart every few minutes, a connection that
    /// lasted, stops mobilityd asked for, and a broker that is not reachable (no connection).
    @Test func ordinaryReconnectsAreNoLoop() {
        let w = Self.run([
            .connected(at: 0), .dropped(at: 1), .connected(at: 2), .dropped(at: 3),
            .connected(at: 4), .dropped(at: 60),  // lasted: the count starts again
            .connected(at: 61), .dropped(at: 62), .connected(at: 63), .dropped(at: 64, requested: true),
            .dropped(at: 65), .dropped(at: 66),  // retries of a broker not reachable: no connection to lose
            .connected(at: 70), .dropped(at: 71), .looping(false)
        ])
        #expect(w.evictions == 4)
    }
}
