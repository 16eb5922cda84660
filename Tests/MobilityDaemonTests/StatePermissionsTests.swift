import Foundation
import Glibc
import TestSupport
import Testing

/// What a real mobilityd leaves on disk is private to its user, whatever the umask it was started with.
@Suite(.serialized) struct StatePermissionsTests {
    static func mode(_ path: String) -> String {
        var st = stat()
        return stat(path, &st) == 0 ? "0" + String(st.st_mode & 0o7777, radix: 8) : "missing"
    }

    /// The state directory, the database and its WAL and shared-memory files, the journal
    /// directory and its segments, while the daemon runs.
    static func modes(_ state: String) -> [String: String] {
        var m: [String: String] = [:]
        for p in ["", "/state.sqlite", "/state.sqlite-wal", "/state.sqlite-shm", "/journal"] { m[p] = mode(state + p) }
        for f in (try? FileManager.default.contentsOfDirectory(atPath: state + "/journal")) ?? [] { m["/journal/" + f] = mode(state + "/journal/" + f) }
        return m
    }

    static func expected(_ m: [String: String]) -> Bool {
        m.count >= 6 && m.allSatisfy { path, mode in mode == (path == "" || path == "/journal" ? "0700" : "0600") }
    }

    @Test(arguments: ["022", "000"])
    func freshStateIsPrivate(umask: String) throws {
        let state = TemporaryPath.make("mw-perm") + "/state"
        defer { try? FileManager.default.removeItem(atPath: (state as NSString).deletingLastPathComponent) }
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, state: state, umask: umask)
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        try pub.publish(samplesTopic("pat"), sampleJSON(id: "p1", value: 1.1, end: "2026-04-01T12:00:00Z"))
        #expect(daemon.waitProcessed(1))
        #expect(eventually { daemon.metric("mobilityd_state_commits_total").map { $0 >= 1 } == true })
        let m = Self.modes(state)
        #expect(Self.expected(m), "\(m.sorted { $0.key < $1.key })")
        #expect(daemon.process.stop() == 0)
    }

    @Test func looseStateDirectoryIsTightenedAndSaidSo() throws {
        let state = TemporaryPath.make("mw-perm")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let broker = try MosquittoBroker()
        var daemon: DaemonUnderTest? = try DaemonUnderTest(broker: broker, state: state)
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        try pub.publish(samplesTopic("pat"), sampleJSON(id: "p1", value: 1.1, end: "2026-04-01T12:00:00Z"))
        #expect(daemon!.waitProcessed(1))
        #expect(daemon!.process.stop() == 0)
        daemon = nil
        // As an older mobilityd left it under umask 022.
        chmod(state, 0o755)
        chmod(state + "/journal", 0o755)
        chmod(state + "/state.sqlite", 0o644)
        for f in try FileManager.default.contentsOfDirectory(atPath: state + "/journal") { chmod(state + "/journal/" + f, 0o644) }
        daemon = try DaemonUnderTest(broker: broker, state: state, umask: "022")
        #expect(daemon!.process.log.contains("tightened to 0700"))
        try pub.publish(samplesTopic("pat"), sampleJSON(id: "p2", value: 1.2, end: "2026-04-02T12:00:00Z"))
        #expect(daemon!.waitProcessed(1))
        let m = Self.modes(state)
        #expect(Self.expected(m), "\(m.sorted { $0.key < $1.key })")
        #expect(daemon!.process.stop() == 0)
    }
}
