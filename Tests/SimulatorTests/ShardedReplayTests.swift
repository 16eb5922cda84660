import Foundation
import Ingest
import MobilityModel
import RuleEngine
import RuleLanguage
import Simulator
import TestSupport
import Testing

/// The replay's direct path: the same outputs as the line-by-line path it replaced, on
/// the shipped scenarios and a cohort, whatever the number of threads and chunk boundaries.
@Suite struct ShardedReplayTests {
    static let program: Program = {
        let (sources, _) = RuleSet.load([RepoPaths.rules])
        return Checker.check(sources).program!
    }()

    static var configuration: EngineConfiguration {
        var c = EngineConfiguration()
        c.publishSeries = true
        return c
    }

    /// What `mobilityctl replay --series` printed before the direct path: each line parsed into a tree,
    /// the payload re-serialised and decoded, every output rendered as a String.
    static func oldReplay(_ lines: [[UInt8]]) -> (out: String, malformed: [Int]) {
        var ing = Ingestor(engine: Engine(program: program, configuration: configuration), clock: .event)
        var out: [EngineOutput] = []
        var malformed: [Int] = []
        for (k, line) in lines.enumerated() where !line.isEmpty {
            switch TrafficRecord.parse(line) {
            case .failure: malformed.append(k + 1)
            case .success(let r): ing.handle(topic: r.topic, payload: r.payload, now: Timestamp(milliseconds: 0), into: &out)
            }
        }
        ing.closeOpenDays(into: &out)
        var text = ""
        for o in out {
            switch o {
            case .alert(let a): text += a.json + "\n"
            case .series(let s): text += s.json + "\n"
            case .rejected: break
            }
        }
        return (text, malformed)
    }

    /// The new path: the lines in chunks of `chunkLines`, on `threads` shards.
    static func newReplay(_ lines: [[UInt8]], threads: Int, chunkLines: Int = 1000) -> (out: [UInt8], notes: [ShardedReplay.Note]) {
        let r = ShardedReplay(program: program, configuration: configuration, shards: threads)
        var out: [UInt8] = [], notes: [ShardedReplay.Note] = []
        for start in stride(from: 0, to: lines.count, by: chunkLines) {
            var chunk: [UInt8] = []
            for l in lines[start..<min(start + chunkLines, lines.count)] { chunk += l; chunk.append(0x0A) }
            notes += chunk.withUnsafeBufferPointer { r.feed(chunk: $0, into: &out) }
        }
        notes += r.finish(into: &out)
        return (out, notes)
    }

    static func scenarioLines() throws -> [[UInt8]] {
        let dir = RepoPaths.root + "/simulator/scenarios"
        var lines: [[UInt8]] = []
        for f in try FileManager.default.contentsOfDirectory(atPath: dir).filter({ $0.hasSuffix(".scenario") }).sorted() {
            lines += try Scenario.load(dir + "/" + f).generator.generate().map { Array($0.record.line.utf8) }
        }
        return lines
    }

    @Test func shippedScenariosGiveTheOldOutputsOnOneAndSeveralThreads() throws {
        let lines = try Self.scenarioLines()
        let old = Self.oldReplay(lines)
        #expect(old.out.utf8.count > 10_000)  // alerts and series: something to compare
        #expect(old.out.contains("\"status\":\"firing\""))
        for threads in [1, 2, 3] {
            let new = Self.newReplay(lines, threads: threads, chunkLines: 97)
            #expect(String(decoding: new.out, as: UTF8.self) == old.out, "threads \(threads)")
            #expect(new.notes.isEmpty)
        }
    }

    @Test func aCohortOfSingleSampleMessagesGivesTheSameBytesOnAnyNumberOfThreads() {
        var pop = Population(users: 40, days: 20, seed: 7)
        pop.samplesPerMessage = 1
        let lines = pop.traffic().map { Array($0.line.utf8) }
        let old = Self.oldReplay(lines)
        let one = Self.newReplay(lines, threads: 1, chunkLines: 5000)
        #expect(String(decoding: one.out, as: UTF8.self) == old.out)
        for threads in [2, 4] {
            #expect(Self.newReplay(lines, threads: threads, chunkLines: 333).out == one.out, "threads \(threads)")
        }
    }

    @Test func badLinesAreReportedWithTheirLineNumbersInOrder() {
        let good = ReplayLines.sample("ann", id: "a1", end: "2026-03-01T10:00:00Z")
        let lines: [[UInt8]] = [
            good, Array("not json".utf8),
            // A samples line of the fast path's shape whose payload is not JSON: still malformed.
            Array(#"{"topic":"mobility/v1/users/ann/samples","payload":{"id":tru}}"#.utf8),
            ReplayLines.sample("bo", id: "b1", end: "2026-03-01T10:00:00Z"), Array(#"{"payload":1}"#.utf8),
            // A string payload that is not JSON is a rejection, not a malformed line.
            Array(#"{"topic":"mobility/v1/users/bo/samples","payload":"{oops"}"#.utf8)
        ]
        for threads in [1, 2] {
            let r = ShardedReplay(program: Self.program, configuration: Self.configuration, shards: threads, verboseRejections: true)
            var out: [UInt8] = []
            var chunk: [UInt8] = []
            for l in lines { chunk += l; chunk.append(0x0A) }
            let notes = chunk.withUnsafeBufferPointer { r.feed(chunk: $0, into: &out) }
            #expect(notes.map(\.line) == [2, 3, 5, 6], "threads \(threads)")
            guard notes.count == 4 else { continue }
            #expect(notes[0].kind == .malformed("not a JSON line: \(JSONValue.parse(Array("not json".utf8)).failureDescription)"))
            if case .malformed = notes[1].kind {} else { Issue.record("line 3: \(notes[1])") }
            #expect(notes[2].kind == .malformed("missing string field 'topic'"))
            if case .rejected(let j) = notes[3].kind { #expect(j.contains("\"reason\":\"not_json\"")) } else { Issue.record("line 6: \(notes[3])") }
            #expect(r.malformed == 3 && r.records == 6 && r.lines == 6)
            #expect(r.rejected[.notJSON] == 1)
        }
    }

    /// The quality run's firings do not depend on the thread count, nor on replaying each user
    /// alone rather than the whole cohort in global time order (``Population/traffic()``): also
    /// with the clinic cohort's phones syncing every few days and its late-entered injuries,
    /// whose withdrawn alerts are marked.
    @Test(arguments: [(Population.Cohort.default, 60, 45), (.clinic, 40, 70)])
    func populationFiringsDoNotDependOnThreadsOrOrder(cohort: Population.Cohort, users: Int, days: Int) {
        let pop = Population(users: users, days: days, seed: 3, cohort: cohort)
        let one = pop.firings(program: Self.program, threads: 1)
        let two = pop.firings(program: Self.program, threads: 2)
        #expect(one.messages == two.messages && one.messages > 1000)
        #expect(one.firings == two.firings)
        #expect(!one.firings.isEmpty)
        if cohort == .clinic { #expect(one.firings.contains { $0.withdrawn }) }
        // The whole cohort through one engine, in the order the gateways would publish it.
        var ing = Ingestor(
            engine: Engine(
                program: Self.program,
                configuration: {
                    var c = EngineConfiguration(); c.publishSeries = false; return c
                }()), clock: .event)
        var out: [EngineOutput] = []
        var collector = FiringCollector()
        for r in pop.traffic() {
            ing.handle(topic: r.topic, payload: r.payload, now: Timestamp(seconds: 0), into: &out)
            collector.collect(out)
            out.removeAll(keepingCapacity: true)
        }
        let streamed = collector.firings.sorted { ($0.rule, $0.user, $0.day) < ($1.rule, $1.user, $1.day) }
        #expect(streamed == one.firings)
    }
}

enum ReplayLines {
    static func sample(_ user: String, id: String, value: Double = 1.2, end: String) -> [UInt8] {
        Array(
            ("{\"topic\":\"mobility/v1/users/\(user)/samples\",\"payload\":{\"id\":\"\(id)\",\"type\":\"walkingSpeed\",\"value\":\(value),"
                + "\"unit\":\"m/s\",\"start\":\"\(end)\",\"end\":\"\(end)\"}}").utf8)
    }
}

extension Result where Failure: CustomStringConvertible {
    fileprivate var failureDescription: String {
        if case .failure(let e) = self { return e.description }
        return ""
    }
}
