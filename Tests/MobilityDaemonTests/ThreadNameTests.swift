import Foundation
import TestSupport
import Testing

/// mobilityd's own threads carry their names for the operating system (`top -H`,
/// `/proc/<pid>/task/*/comm`): a real daemon with two shards.
@Suite struct ThreadNameTests {
    @Test func theShardsTheDecodeStageAndTheReportWorkersAreNamed() throws {
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, extra: ["--shards", "2"])
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.process.pid)/task")
        let names = Set(
            tasks.compactMap { tid in
                (try? String(contentsOfFile: "/proc/\(daemon.process.pid)/task/\(tid)/comm", encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            })
        for name in ["shard-0", "shard-1", "decode", "reports-0", "reports-1"] {
            #expect(names.contains(name), "no thread named \(name) among \(names.sorted())")
        }
    }
}
