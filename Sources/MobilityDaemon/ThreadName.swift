import Glibc

/// Names the calling thread for the operating system (`top -H`, `ps -L`, `/proc/<pid>/task/*/comm`,
/// profilers), so an operator sees which of mobilityd's threads is busy. Foundation's
/// `Thread.name` on Linux names the `Thread` object only: every thread showed as `mobilityd`.
enum ThreadName {
    /// Sets the calling thread's name (the kernel keeps 15 bytes of it) through
    /// `/proc/thread-self/comm` (`pthread_setname_np` is not in Swift's Glibc module, `prctl` is
    /// variadic). A kernel without it leaves the name as it was.
    static func set(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
