/// A part of the daemon that is started once and stopped once (swift-service-lifecycle's shape,
/// synchronous): the HTTP endpoint, the publisher, the shards, the subscriber, a timer, the
/// signal handlers. A ``ServiceGroup`` starts services in dependency order and stops them in
/// reverse.
protocol Service: AnyObject {
    /// A short name for logs (`service=…`).
    var name: String { get }
    /// Starts the service. A service that throws has cleaned up after itself: it is not stopped.
    func start() throws
    /// Stops the service; called once, and only after a successful `start`.
    func stop()
}
