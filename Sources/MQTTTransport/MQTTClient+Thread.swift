import Glibc

extension MQTTClient {
    /// Runs `body` on a thread of its own named `name` for the kernel (`top -H`, `ps -L`; 15
    /// bytes kept): a client's network loop blocks its thread for the client's whole life, which
    /// must not hold one of Dispatch's shared worker threads.
    /// False (nothing runs) when the system refuses a thread.
    static func spawn(_ name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        final class Work: Sendable {
            let name: String
            let body: @Sendable () -> Void
            init(_ name: String, _ body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        let context = Unmanaged.passRetained(Work(name, body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, nil,
            { raw in
                let work = Unmanaged<Work>.fromOpaque(raw!).takeRetainedValue()
                let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
                if fd >= 0 {
                    let bytes = Array(work.name.utf8.prefix(15))
                    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                    close(fd)
                }
                work.body()
                return nil
            }, context)
        guard rc == 0 else {
            Unmanaged<Work>.fromOpaque(context).release()
            return false
        }
        pthread_detach(thread)
        return true
    }
}
