import Synchronization

/// A strong reference set once, after the object that reads it was created, and read from
/// callbacks (the publisher's connect callback needs the publisher itself). It keeps its value
/// alive: a cycle through it lasts as long as the daemon, which is the process.
final class LateReference<T: AnyObject & Sendable>: Sendable {
    private let ref = Mutex<T?>(nil)
    /// Sets the reference (once, before the callbacks that read it can run).
    func set(_ v: T) { ref.withLock { $0 = v } }
    /// The reference, or nil before it is set.
    var value: T? { ref.withLock { $0 } }
}
