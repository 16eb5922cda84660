import Foundation

/// Runs the daemon's services (swift-service-lifecycle's `ServiceGroup`, synchronous): starts them
/// in the order given (each may depend on those before it), installs the signal handlers once,
/// after every service started, waits for the ``Termination`` and stops the services that started
/// in reverse order, once: after a start failure, or at shutdown. Used from one thread (the
/// daemon's `run`), so it holds no lock.
final class ServiceGroup {
    /// What the group does on a signal (``SignalService``).
    struct Signals {
        /// Signals that end the run (SIGTERM, SIGINT): `announce` says so, then the termination is requested.
        var shutdown: [Int32]
        /// Called on the signal queue before a shutdown signal ends the run (a log line, the service manager's status).
        var announce: @Sendable (Int32) -> Void
        /// A signal that reloads (SIGHUP), and what it does.
        var reload: (signal: Int32, handler: @Sendable () -> Void)?
    }

    private let services: [any Service]
    private let log: Logger?
    private let clock: DaemonClock
    /// How long each service took to stop, in stop order (milliseconds).
    private(set) var stopTimes: [(service: String, ms: Int)] = []
    /// The services started so far, in start order (stopping pops them).
    private var started: [any Service] = []
    private var didStart = false
    /// What ends the run.
    let termination: Termination

    /// A group of `services`, in start order; `log` gets a debug line per start and stop. With
    /// `signals`, they are held from now on (ignored, so that none ends the process during start-up)
    /// and handled once every service started (the handlers are the last service, the first stopped).
    init(_ services: [any Service], signals: Signals? = nil, termination: Termination = Termination(), log: Logger? = nil, clock: DaemonClock = .system) {
        self.log = log
        self.clock = clock
        self.termination = termination
        guard let signals else {
            self.services = services
            return
        }
        self.services = services + [SignalService(signals, termination: termination)]
    }

    /// The names of the services, in start order.
    var names: [String] { services.map(\.name) }

    /// Starts every service in order. When one throws, the ones started before it are stopped in
    /// reverse order and its error is rethrown. Starts at most once.
    func start() throws {
        precondition(!didStart, "a service group starts once")
        didStart = true
        for service in services {
            do {
                try service.start()
            } catch {
                log?.debug("service failed to start; stopping the started ones", ["service": service.name])
                stop()
                throw error
            }
            started.append(service)
            log?.debug("service started", ["service": service.name])
        }
    }

    /// Starts the services, calls `running` once all started, waits for the termination, then
    /// stops them in reverse order. A start failure is rethrown (the started ones are stopped).
    func run(running: () -> Void = {}) throws {
        try start()
        running()
        termination.wait()
        stop()
    }

    /// Stops the started services in reverse start order. A second call does nothing.
    func stop() {
        while let service = started.popLast() {
            log?.debug("stopping service", ["service": service.name])
            let began = clock.uptimeNanoseconds()
            service.stop()
            stopTimes.append((service.name, Int((clock.uptimeNanoseconds() &- began) / 1_000_000)))
        }
    }

    /// The services that took at least `ms` milliseconds to stop, with how long
    /// (`shards:1200,publisher:310`), for the run's last line: a slow stop holds up what waits
    /// for it (the partitions a claimer takes over start after its run stopped).
    func slowStops(atLeast ms: Int) -> String {
        stopTimes.filter { $0.ms >= ms }.map { "\($0.service):\($0.ms)" }.joined(separator: ",")
    }
}
