/// Starts services in the order given (each may depend on those before it) and stops those that
/// started in reverse order, once: after a start failure, or at shutdown. Used from one thread
/// (the daemon's `run`), so it holds no lock.
final class ServiceGroup {
    private let services: [any Service]
    private let log: Logger?
    /// The services started so far, in start order (stopping pops them).
    private var started: [any Service] = []
    private var didStart = false

    /// A group of `services`, in start order; `log` gets a debug line per start and stop.
    init(_ services: [any Service], log: Logger? = nil) {
        self.services = services
        self.log = log
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

    /// Stops the started services in reverse start order. A second call does nothing.
    func stop() {
        while let service = started.popLast() {
            log?.debug("stopping service", ["service": service.name])
            service.stop()
        }
    }
}
