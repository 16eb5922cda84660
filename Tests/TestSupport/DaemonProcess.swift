import Foundation
import Glibc

/// A child process (mosquitto, mobilityd, …) started with `posix_spawn` with an **empty signal
/// mask and default dispositions** — test-runner threads block signals and children would inherit
/// that, so SIGTERM/SIGHUP would never arrive. Output goes to a log file. Reaped with `waitpid`.
package final class ChildProcess: @unchecked Sendable {
    /// The child's process id.
    package let pid: pid_t
    /// The file the child's stdout and stderr go to.
    package let logPath: String
    private let lock = NSLock()
    private var status: Int32?

    /// The path of a product built by `swift build` in this package.
    /// A product of the build: the debug build's, or with `MW_PRODUCTS=release` the release
    /// build's (`scripts/fault-run.sh` measures what ships).
    package static func product(_ name: String) -> String {
        RepoPaths.root + "/.build/\(ProcessInfo.processInfo.environment["MW_PRODUCTS"] ?? "debug")/" + name
    }

    /// Starts `executable` with arguments (and the current environment plus `environment`).
    package init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], logPath: String? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw HarnessError("\(executable) is not built; run 'swift build' first (scripts/test.sh does)")
        }
        let log = logPath ?? TemporaryPath.make("mw-child", suffix: ".log")
        self.logPath = log
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attr, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var child = pid_t()
        let rc = posix_spawn(&child, executable, &actions, &attr, argv, envp)
        guard rc == 0 else { throw HarnessError("cannot start \(executable): \(String(cString: strerror(rc)))") }
        pid = child
    }

    /// The output so far.
    package var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Sends a signal.
    package func signal(_ s: Int32) { if isRunning { kill(pid, s) } }

    /// Whether the child is still running (reaps it when it has exited).
    package var isRunning: Bool {
        lock.withLock {
            if status != nil { return false }
            var st: Int32 = 0
            let r = waitpid(pid, &st, WNOHANG)
            if r == pid { status = st; return false }
            return r == 0
        }
    }

    /// Waits for exit (SIGKILL after the timeout); returns the exit code, or 128+signal.
    @discardableResult
    package func wait(timeout: TimeInterval = 15) -> Int32 {
        if !eventually(timeout: timeout, { !isRunning }) {
            kill(pid, SIGKILL)
            _ = eventually(timeout: 5, { !isRunning })
        }
        guard let st = lock.withLock({ status }) else { return -1 }
        let sig = st & 0x7f
        return sig == 0 ? (st >> 8) & 0xff : 128 + sig
    }

    /// Signals and waits (SIGKILL after the timeout).
    @discardableResult
    package func stop(signal s: Int32 = SIGTERM, timeout: TimeInterval = 10) -> Int32 {
        signal(s)
        return wait(timeout: timeout)
    }

    deinit {
        if isRunning { kill(pid, SIGKILL); _ = eventually(timeout: 5, { !isRunning }) }
        try? FileManager.default.removeItem(atPath: logPath)
    }
}
