import Foundation
import Glibc
import TestSupport

/// The built `mobilityctl` run as a person would, and a `mobilityd` for it to talk to.
enum Ctl {
    struct Run { var status: Int32; var stdout: String; var stderr: String }

    /// Runs `mobilityctl` with stdout and stderr apart.
    static func run(_ args: [String]) throws -> Run {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ChildProcess.product("mobilityctl"))
        p.arguments = args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Run(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }

    /// mobilityd with a care-teams file, connected and subscribed.
    static func daemon(_ broker: MosquittoBroker, dir: String, careTeams: String) throws -> ChildProcess {
        let teams = dir + "/care-teams"
        try careTeams.write(toFile: teams, atomically: true, encoding: .utf8)
        chmod(teams, 0o600)
        let port = try freePort()
        let d = try ChildProcess(
            ChildProcess.product("mobilityd"),
            [
                "--broker", broker.url, "--rules", RepoPaths.rules, "--state", dir + "/state", "--clock", "event", "--care-teams", teams,
                "--metrics-address", "127.0.0.1:\(port)"
            ])
        let ready = eventually(timeout: 15) {
            guard let r = httpGet(port: port, path: "/metrics"), let m = try? parsePrometheus(r.body) else { return false }
            return m["mobilityd_broker_subscribed"] == 1
        }
        guard ready else { throw HarnessError("mobilityd did not subscribe:\n\(d.log)") }
        return d
    }
}
