import Foundation
import Ingest
import MobilityModel
import RuleEngine
import RuleLanguage
import RuleTesting

func writeErr(_ s: String) { FileHandle.standardError.write(Data(s.utf8)) }

enum CheckCommand {
    static func run(paths: [String], colour: Bool) -> Int32 {
        let (sources, errors) = RuleSet.load(paths)
        for e in errors { writeErr("mobilityctl: \(e)\n") }
        let (program, diagnostics) = Checker.check(sources)
        writeErr(DiagnosticRenderer(files: sources, colour: colour).render(diagnostics))
        let nErr = diagnostics.filter { $0.severity == .error }.count
        if let program, errors.isEmpty {
            print("SUCCESS: \(sources.count) file\(sources.count == 1 ? "" : "s"), \(program.alerts.count) alerts, \(program.series.count) series")
            return 0
        }
        writeErr("FAILED: \(nErr) error\(nErr == 1 ? "" : "s")\(errors.isEmpty ? "" : ", \(errors.count) unreadable path(s)")\n")
        return 1
    }
}

enum TestCommand {
    static func run(_ args: [String], colour: Bool) -> Int32 {
        var paths: [String] = [], roots: [String] = []
        var i = 0
        while i < args.count {
            if args[i] == "--rules-root" {
                guard i + 1 < args.count else { fail("mobilityctl test: --rules-root needs a directory") }
                roots.append(args[i + 1])
                i += 2
                continue
            }
            if args[i].hasPrefix("-") { fail("mobilityctl test: unknown option \(args[i])") }
            paths.append(args[i])
            i += 1
        }
        guard !paths.isEmpty else { fail("mobilityctl test: name at least one test file or directory\n\n" + usage) }
        let report = RuleTestRunner.run(paths: paths, rulesRoots: roots)
        print(report.text, terminator: "")
        return report.ok ? 0 : 1
    }
}

enum ReplayCommand {
    /// Exit code when the traffic had malformed lines (the rest was replayed).
    static let malformedExit: Int32 = 3
    /// Malformed lines printed one by one; beyond that, only counted.
    static let maxMalformedShown = 20

    static func run(_ args: [String]) -> Int32 {
        var rules: [String] = []
        var file: String?
        var series = false, verbose = false, finalClose = true
        var threads = min(ProcessInfo.processInfo.activeProcessorCount, 8)
        var config = EngineConfiguration()
        var i = 0
        func value() -> String {
            i += 1
            guard i < args.count else { fail("mobilityctl replay: \(args[i - 1]) needs a value") }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--rules": rules.append(value())
            case "--series": series = true
            case "--verbose", "-v": verbose = true
            case "--no-final-close": finalClose = false
            case "--threads": threads = Int(value()).flatMap { (1...64).contains($0) ? $0 : nil } ?? { fail("--threads takes 1 to 64") }()
            case "--grace": config.graceSeconds = Int64(value()) ?? { fail("--grace takes seconds") }()
            case "--lateness": config.allowedLatenessSeconds = (Int64(value()) ?? { fail("--lateness takes days") }()) * 86_400
            case "--time-zone": config.defaultCalendar = LocalCalendar(identifier: value()) ?? { fail("unknown time zone") }()
            case let a where a.hasPrefix("-"): fail("mobilityctl replay: unknown option \(a)")
            default:
                guard file == nil else { fail("mobilityctl replay: one traffic file") }
                file = args[i]
            }
            i += 1
        }
        guard let file, !rules.isEmpty else { fail("usage: mobilityctl replay --rules DIR [--series] [--verbose] [--no-final-close] FILE") }
        let (sources, errors) = RuleSet.load(rules)
        guard errors.isEmpty else { errors.forEach { writeErr("mobilityctl: \($0)\n") }; return 1 }
        let (program, diagnostics) = Checker.check(sources)
        guard let program else {
            writeErr(DiagnosticRenderer(files: sources).render(diagnostics))
            return 1
        }
        config.publishSeries = series
        let fd = open(file, O_RDONLY)
        guard fd >= 0 else { writeErr("mobilityctl: cannot read \(file)\n"); return 1 }
        defer { close(fd) }
        let replay = ShardedReplay(program: program, configuration: config, shards: threads, verboseRejections: verbose)
        var out: [UInt8] = []
        out.reserveCapacity(1 << 20)
        var shownMalformed = 0
        func report(_ notes: [ShardedReplay.Note]) {
            for n in notes {
                switch n.kind {
                case .malformed(let msg):
                    shownMalformed += 1
                    if shownMalformed <= maxMalformedShown { writeErr("\(file):\(n.line ?? 0): malformed line: \(msg)\n") }
                case .rejected(let r): writeErr("\(file):\(n.line.map(String.init) ?? "end"): rejected: \(r)\n")
                }
            }
        }
        // Whole lines in chunks: the chunk ends after its last newline, the rest starts the next.
        let chunkSize = 8 << 20
        var buffer = [UInt8](repeating: 0, count: chunkSize)
        var held = 0
        while true {
            if held == buffer.count { buffer += [UInt8](repeating: 0, count: buffer.count) }  // a line longer than the buffer
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + held, $0.count - held) }
            guard got >= 0 else { writeErr("mobilityctl: cannot read \(file)\n"); return 1 }
            let end = held + got
            let cut: Int
            if got == 0 {
                cut = end  // the end of the file: what is held is the last line
            } else if let newline = buffer[held..<end].lastIndex(of: 0x0A) {
                cut = newline + 1
            } else {
                held = end
                continue
            }
            if cut > 0 { report(buffer.withUnsafeBufferPointer { replay.feed(chunk: UnsafeBufferPointer(rebasing: $0[..<cut]), into: &out) }) }
            writeOut(&out)
            if got == 0 { break }
            buffer.withUnsafeMutableBufferPointer { b in
                for k in cut..<end { b[k - cut] = b[k] }
            }
            held = end - cut
        }
        if finalClose { report(replay.finish(into: &out)) }
        writeOut(&out)
        writeErr(summary(lines: replay.records, malformed: replay.malformed, rejected: replay.rejected))
        return replay.malformed > 0 ? malformedExit : 0
    }

    /// Writes and empties `out` on standard output.
    static func writeOut(_ out: inout [UInt8]) {
        out.withUnsafeBytes { b in
            var done = 0
            while done < b.count {
                let n = write(1, b.baseAddress! + done, b.count - done)
                if n <= 0 { if n < 0, errno == EINTR { continue }; break }
                done += n
            }
        }
        out.removeAll(keepingCapacity: true)
    }

    /// One line on stderr: what was read, what was malformed, what was rejected by reason.
    static func summary(lines: Int, malformed: Int, rejected: [RejectionReason: Int]) -> String {
        let total = rejected.values.reduce(0, +)
        var s = "mobilityctl replay: \(lines) line\(lines == 1 ? "" : "s"), \(malformed) malformed, \(total) rejected"
        if total > 0 {
            s +=
                " ("
                + rejected.sorted { ($1.value, $0.key.rawValue) < ($0.value, $1.key.rawValue) }
                .map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ") + ")"
        }
        if malformed > maxMalformedShown { s += "; first \(maxMalformedShown) malformed lines shown" }
        return s + "\n"
    }
}

/// Reads lines from a file handle without loading the whole file.
///
/// Consumed lines are skipped by an index and the buffer compacted once per chunk: removing each
/// line from the front of the buffer moved the rest of the megabyte every line, which was 86 % of
/// a replay's instructions (`mobilityctl report --traffic` reads with this).
struct LineReader: Sequence, IteratorProtocol {
    let handle: FileHandle
    var buffer: [UInt8] = []
    var start = 0
    var eof = false

    init(_ h: FileHandle) { handle = h }

    mutating func next() -> [UInt8]? {
        while true {
            if let nl = buffer[start...].firstIndex(of: 10) {
                let line = Array(buffer[start..<nl])
                start = nl + 1
                return line
            }
            if eof {
                if start >= buffer.count { return nil }
                defer { buffer = []; start = 0 }
                return Array(buffer[start...])
            }
            buffer.removeSubrange(..<start)
            start = 0
            let chunk = handle.readData(ofLength: 1 << 20)
            if chunk.isEmpty { eof = true } else { buffer += chunk }
        }
    }
}
