import Foundation
import Glibc

/// A real PostgreSQL 15 server for tests: `initdb` into a temporary directory, `postgres` on a
/// free loopback port (its socket in that directory), stopped by its PID on deinit, or at the
/// test process's exit for ``shared()``. As root the server runs as the `postgres` user (initdb
/// refuses root). Missing binaries are a failure that says how to install them, never a skip.
package final class PostgresServer: @unchecked Sendable {
    /// Where Debian's PostgreSQL 15 binaries are (not on the PATH).
    package static let bin = "/usr/lib/postgresql/15/bin"
    /// The port it listens on, on 127.0.0.1.
    package let port: Int
    /// Its directory (data, socket, log).
    package let directory: String
    private var process: ChildProcess?
    private let lock = NSLock()
    private var databases = 0

    /// The log file.
    package var logPath: String { directory + "/postgres.log" }

    /// Creates a cluster and starts it. `durable`: fsync as a production server does (the
    /// benchmarks); tests run without (their subject is not PostgreSQL's crash safety).
    package init(durable: Bool = false) throws {
        guard FileManager.default.isExecutableFile(atPath: PostgresServer.bin + "/initdb") else {
            throw HarnessError(
                "PostgreSQL 15 is not installed (\(PostgresServer.bin)/initdb is missing): run scripts/install-deps.sh, which installs postgresql-15")
        }
        port = try freePort()
        directory = TemporaryPath.make("mw-pg")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0 {
            guard let pw = getpwnam("postgres") else { throw HarnessError("no 'postgres' user to run PostgreSQL as (the postgresql-15 package creates it)") }
            guard chown(directory, pw.pointee.pw_uid, pw.pointee.pw_gid) == 0 else { throw HarnessError("cannot chown \(directory) to postgres") }
        }
        let (status, output) = PostgresServer.run(
            PostgresServer.bin + "/initdb", ["-D", directory + "/data", "-A", "trust", "-U", "mw", "-E", "UTF8", "--locale=C", "--no-sync"])
        guard status == 0 else { throw HarnessError("initdb failed (\(status)): \(output)") }
        var conf = "listen_addresses = '127.0.0.1'\nport = \(port)\nunix_socket_directories = '\(directory)'\nmax_connections = 200\n"
        if !durable { conf += "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n" }
        let confPath = directory + "/data/postgresql.auto.conf"
        let old = (try? String(contentsOfFile: confPath, encoding: .utf8)) ?? ""
        try (old + conf).write(toFile: confPath, atomically: false, encoding: .utf8)
        try start()
    }

    /// Runs a command (as `postgres` when root); its status and output.
    static func run(_ executable: String, _ arguments: [String]) -> (Int32, String) {
        let p = Process()
        if getuid() == 0 {
            p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            p.arguments = ["--reuid=postgres", "--regid=postgres", "--init-groups", "--", executable] + arguments
        } else {
            p.executableURL = URL(fileURLWithPath: executable)
            p.arguments = arguments
        }
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        p.currentDirectoryURL = URL(fileURLWithPath: "/")
        do { try p.run() } catch { return (-1, "\(error)") }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Starts (or restarts) the server and waits until it accepts connections.
    package func start() throws {
        // setpriv execs: the child's PID is the postmaster's, which stop() signals.
        let argv = ["-D", directory + "/data"]
        let p =
            getuid() == 0
            ? try ChildProcess(
                "/usr/bin/setpriv", ["--reuid=postgres", "--regid=postgres", "--init-groups", "--", PostgresServer.bin + "/postgres"] + argv, logPath: logPath)
            : try ChildProcess(PostgresServer.bin + "/postgres", argv, logPath: logPath)
        lock.withLock { process = p }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if !p.isRunning { break }
            if PostgresServer.run(PostgresServer.bin + "/pg_isready", ["-q", "-h", "127.0.0.1", "-p", String(port)]).0 == 0 { return }
            usleep(50_000)
        }
        throw HarnessError("postgres did not start on port \(port); see \(logPath): \((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")")
    }

    /// Stops the server by its PID (SIGINT: fast shutdown; SIGKILL: a crash) and waits for it.
    package func stop(signal: Int32 = SIGINT) {
        guard
            let p = lock.withLock({ () -> ChildProcess? in
                defer { process = nil }; return process
            })
        else { return }
        p.stop(signal: signal, timeout: 20)
    }

    /// A new, empty database; its URL (`postgres://mw@127.0.0.1:PORT/NAME`).
    package func createDatabase() throws -> String {
        let name = lock.withLock { () -> String in
            databases += 1
            return "mw_test_\(getpid())_\(databases)"
        }
        _ = try psql("CREATE DATABASE \(name)", database: "postgres")
        return url(name)
    }

    /// The URL of a database on this server.
    package func url(_ database: String) -> String { "postgres://mw@127.0.0.1:\(port)/\(database)" }

    /// Runs SQL with psql (unaligned, tuples only); its output.
    @discardableResult
    package func psql(_ sql: String, database: String) throws -> String {
        let (status, out) = PostgresServer.run(
            PostgresServer.bin + "/psql",
            ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(port), "-U", "mw", "-d", database, "-c", sql])
        guard status == 0 else { throw HarnessError("psql failed (\(status)): \(out)") }
        return out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// One server for the whole test process, started on first use and stopped when it exits.
    package static func shared() throws -> PostgresServer { try sharedServer.get() }

    private static let sharedServer: Result<PostgresServer, any Error> = {
        let r = Result { try PostgresServer() }
        if case .success = r {
            atexit {
                guard case .success(let s) = PostgresServer.sharedServer else { return }
                s.stop()
                try? FileManager.default.removeItem(atPath: s.directory)
            }
        }
        return r
    }()

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
