import Dispatch
import MobilityModel
import RuleEngine
import RuleLanguage

#if canImport(Glibc)
    import Glibc
#endif

/// `mobilityctl replay` on several threads: users hashed to shards (``TrafficLine/shard(ofTopic:shards:)``),
/// each shard a ``Replay`` of its own, the outputs rendered as JSON lines straight into bytes and
/// merged in the order one shard gives — by line, and at the end by user — so that the output is
/// the same bytes whatever the number of shards.
///
/// The caller reads the file and hands over chunks of whole lines (``feed(chunk:into:)``); this
/// type does no I/O.
package final class ShardedReplay: @unchecked Sendable {
    // @unchecked: during `feed`/`finish` each shard is touched by exactly one thread (its own
    // iteration of `concurrentPerform`), and the caller uses this object from one thread.

    /// Something to report on stderr, tied to a line (nil: the final close).
    package struct Note: Sendable, Equatable {
        /// What happened.
        package enum Kind: Sendable, Equatable {
            /// The line is not a traffic record (and why).
            case malformed(String)
            /// A rejection, as published on the `rejected` topics (only with `verboseRejections`).
            case rejected(String)
        }
        /// The 1-based line number, nil for the final close.
        package var line: Int?
        /// What happened.
        package var kind: Kind
    }

    private final class Shard: @unchecked Sendable {  // see the type's invariant
        var replay: Replay
        var engineOut: [EngineOutput] = []
        var out: [UInt8] = []
        /// Per line (or user, at the end) that produced output: its key and the end of its bytes in `out`, of its notes in `notes`.
        var marks: [(line: Int, outEnd: Int, notesEnd: Int)] = []
        var finalUsers: [String] = []
        var notes: [Note] = []
        var lines = 0, nonEmpty = 0, malformed = 0
        init(_ r: Replay) { replay = r }
    }

    private let shards: [Shard]
    private let verboseRejections: Bool
    /// Lines read so far (the number of the last line of the last chunk).
    package private(set) var lines = 0
    /// Non-empty lines read so far.
    package private(set) var records = 0
    /// Malformed lines so far.
    package private(set) var malformed = 0

    /// Creates a replay over `shards` shards (1: all on the calling thread).
    package init(program: Program, configuration: EngineConfiguration, shards: Int, verboseRejections: Bool = false) {
        precondition(shards >= 1, "at least one shard")
        self.shards = (0..<shards).map { _ in Shard(Replay(program: program, configuration: configuration)) }
        self.verboseRejections = verboseRejections
    }

    /// How many inputs were rejected so far, by reason (all shards).
    package var rejected: [RejectionReason: Int] {
        shards.reduce(into: [:]) { acc, s in for (k, v) in s.replay.rejected { acc[k, default: 0] += v } }
    }

    /// Replays a chunk of whole lines (each ended by a newline; the last may lack one at the end of
    /// the input), appending the JSON lines of the outputs to `out`; returns the chunk's notes in line order.
    package func feed(chunk: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) -> [Note] {
        let first = lines
        let n = shards.count
        if n == 1 {
            Self.run(shards[0], chunk, firstLine: first, index: 0, of: 1, verbose: verboseRejections)
        } else {
            let verbose = verboseRejections
            nonisolated(unsafe) let chunk = chunk
            DispatchQueue.concurrentPerform(iterations: n) { i in Self.run(shards[i], chunk, firstLine: first, index: i, of: n, verbose: verbose) }
        }
        lines += shards[0].lines
        records += shards[0].nonEmpty
        malformed += shards.reduce(0) { $0 + $1.malformed }
        return merge(into: &out) { a, b in a.line < b.line }
    }

    /// The end of the input: closes each user's days through the day of the user's last sample
    /// (``Replay/finish()``), in user-id order across the shards.
    package func finish(into out: inout [UInt8]) -> [Note] {
        let verbose = verboseRejections
        let run: @Sendable (Int) -> Void = { [shards] i in
            let s = shards[i]
            s.finalUsers = s.replay.ingestor.clockedUsers
            for (k, user) in s.finalUsers.enumerated() {
                s.replay.finishUser(user, into: &s.engineOut)
                Self.render(s, verbose: verbose, line: nil)
                s.marks.append((k, s.out.count, s.notes.count))
            }
        }
        if shards.count == 1 { run(0) } else { DispatchQueue.concurrentPerform(iterations: shards.count, execute: run) }
        return merge(into: &out) { a, b in a.finalUsers[a.line] < b.finalUsers[b.line] }
    }

    private static func run(_ s: Shard, _ chunk: UnsafeBufferPointer<UInt8>, firstLine: Int, index: Int, of n: Int, verbose: Bool) {
        s.lines = 0
        s.nonEmpty = 0
        s.malformed = 0
        guard let base = chunk.baseAddress else { return }
        var p = 0
        let count = chunk.count
        var lineNo = firstLine
        // The last topic seen (in this chunk) and whether its user is this shard's.
        var lastTopic: UnsafeBufferPointer<UInt8>?
        var lastMine = false
        while p < count {
            let end = memchr(base + p, 0x0A, count - p).map { UnsafeRawPointer($0) - UnsafeRawPointer(base) } ?? count
            let line = UnsafeBufferPointer(start: base + p, count: end - p)
            p = end + 1
            lineNo += 1
            if line.isEmpty { continue }
            s.nonEmpty += 1
            // Scanned once: for the shard, then for the replay. Lines come in runs of one user's
            // topic, so the shard of the last topic is kept (one memcmp instead of a hash).
            let scan = TrafficLine.scan(line)
            if n > 1 {
                let mine: Bool
                if let scan {
                    let topic = UnsafeBufferPointer(rebasing: line[scan.topic])
                    if let last = lastTopic, last.count == topic.count, memcmp(last.baseAddress!, topic.baseAddress!, topic.count) == 0 {
                        mine = lastMine
                    } else {
                        lastMine = TrafficLine.shard(ofTopic: topic, shards: n) == index
                        lastTopic = topic
                        mine = lastMine
                    }
                } else {
                    mine = shard(of: line, shards: n) == index
                }
                if !mine { continue }
            }
            if let e = s.replay.feed(line: line, scan: scan, into: &s.engineOut) {
                s.malformed += 1
                s.notes.append(Note(line: lineNo, kind: .malformed(e.message)))
                s.marks.append((lineNo, s.out.count, s.notes.count))
                continue
            }
            if !s.engineOut.isEmpty {
                render(s, verbose: verbose, line: lineNo)
                s.marks.append((lineNo, s.out.count, s.notes.count))
            }
        }
        s.lines = lineNo - firstLine
    }

    /// The shard of a line: by its topic (the fast scan's, else the full parse's; a line without a topic: shard 0).
    private static func shard(of line: UnsafeBufferPointer<UInt8>, shards n: Int) -> Int {
        if let scan = TrafficLine.scan(line) { return TrafficLine.shard(ofTopic: UnsafeBufferPointer(rebasing: line[scan.topic]), shards: n) }
        guard case .success(let r) = TrafficRecord.parse(Array(line)) else { return 0 }
        var t = r.topic
        return t.withUTF8 { TrafficLine.shard(ofTopic: $0, shards: n) }
    }

    private static func render(_ s: Shard, verbose: Bool, line: Int?) {
        for o in s.engineOut {
            switch o {
            case .series(let p): p.appendJSON(to: &s.out); s.out.append(0x0A)
            case .alert(let a): s.out.append(contentsOf: a.jsonBytes); s.out.append(0x0A)
            case .rejected(let user, let topic, let r):
                if verbose { s.notes.append(Note(line: line, kind: .rejected(r.json(user: user, topic: topic)))) }
            }
        }
        s.engineOut.removeAll(keepingCapacity: true)
    }

    /// Appends the shards' marked outputs in the order `before` gives their marks (each shard's
    /// are already in order); returns the notes likewise; empties the shards' buffers.
    private func merge(into out: inout [UInt8], before: (Head, Head) -> Bool) -> [Note] {
        var notes: [Note] = []
        if shards.count == 1 {
            let s = shards[0]
            out.append(contentsOf: s.out)
            notes = s.notes
        } else {
            var heads = shards.map { Head(shard: $0, mark: 0, line: 0) }
            for k in heads.indices where !heads[k].done { heads[k].line = heads[k].shard.marks[0].line }
            while true {
                var best: Int?
                for k in heads.indices where !heads[k].done {
                    if let b = best, !before(heads[k], heads[b]) { continue }
                    best = k
                }
                guard let b = best else { break }
                let s = heads[b].shard, m = heads[b].mark
                let outStart = m == 0 ? 0 : s.marks[m - 1].outEnd, notesStart = m == 0 ? 0 : s.marks[m - 1].notesEnd
                out.append(contentsOf: s.out[outStart..<s.marks[m].outEnd])
                notes.append(contentsOf: s.notes[notesStart..<s.marks[m].notesEnd])
                heads[b].mark += 1
                if !heads[b].done { heads[b].line = s.marks[heads[b].mark].line }
            }
        }
        for s in shards {
            s.out.removeAll(keepingCapacity: true)
            s.notes.removeAll(keepingCapacity: true)
            s.marks.removeAll(keepingCapacity: true)
        }
        return notes
    }

    /// A shard's next mark during a merge: `line` is its key (a line number, or at the end an index into `finalUsers`).
    private struct Head {
        let shard: Shard
        var mark: Int
        var line: Int
        var done: Bool { mark >= shard.marks.count }
        var finalUsers: [String] { shard.finalUsers }
    }
}
