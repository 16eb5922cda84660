import Foundation
import Glibc

/// mobilityd's own threads, named for the operating system (`top -H`, `ps -L`,
/// `/proc/<pid>/task/*/comm`, profilers), so an operator sees which of them is busy. Foundation's
/// `Thread.name` on Linux names the `Thread` object only: every thread showed as `mobilityd`.
enum ThreadName {
    /// A thread (not started) that names itself `name` (the kernel keeps 15 bytes) and runs `body`.
    static func thread(_ name: String, _ body: @escaping @Sendable () -> Void) -> Thread {
        let t = Thread {
            set(name)
            body()
        }
        t.name = name
        return t
    }

    /// Names the calling thread through `/proc/thread-self/comm` (`pthread_setname_np` is not in
    /// Swift's Glibc module, `prctl` is variadic). A kernel without it leaves the name as it was.
    private static func set(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
