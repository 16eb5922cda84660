import Foundation

/// A built product of this package run to its end with piped output: its exit status, standard
/// output and standard error (a command-line tool driven by a test).
package struct ProductRun: Sendable {
    /// The exit status.
    package var status: Int32
    /// What it wrote to standard output.
    package var stdout: String
    /// What it wrote to standard error.
    package var stderr: String

    /// Runs `product` (built by `swift build`) with `arguments` and waits for it, with the test's
    /// environment and `environment` over it; throws when it is not built.
    package init(_ product: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        let exe = ChildProcess.product(product)
        guard FileManager.default.isExecutableFile(atPath: exe) else { throw HarnessError("\(exe) is not built; run 'swift build' first") }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = arguments
        if !environment.isEmpty { p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        status = p.terminationStatus
        stdout = String(decoding: o, as: UTF8.self)
        stderr = String(decoding: e, as: UTF8.self)
    }
}
