import Foundation
import Glibc

/// What reading a journal directory found: its segments, the records that cannot be read, and
/// a torn tail. Made by ``IngestJournal/inspect(_:)`` without changing a byte.
package struct JournalInspection: Sendable {
    /// One segment file.
    package struct Segment: Sendable {
        /// The file's path.
        package var path: String
        /// The sequence number its name gives for its first record.
        package var first: UInt64
        /// The highest sequence number it may hold (`first - 1` when it holds none); past its
        /// last intact record when it ends in damage that no later record bounds.
        package var last: UInt64
        /// Its intact records.
        package var records: Int
        /// Its size.
        package var bytes: Int
    }

    /// A partial record at the end of the newest segment: a write that a crash cut short, which
    /// was never acknowledged (libmosquitto acknowledges after the write returned).
    package struct TornTail: Sendable, Equatable {
        /// The segment's path.
        package var path: String
        /// Where the partial record starts (the segment is cut there when the journal is opened).
        package var offset: Int
        /// Its bytes.
        package var bytes: Int

        /// Creates a torn tail's description.
        package init(path: String, offset: Int, bytes: Int) {
            self.path = path
            self.offset = offset
            self.bytes = bytes
        }
    }

    /// The segments, oldest first.
    package var segments: [Segment] = []
    /// Everything that cannot be read, in order; empty for an intact journal.
    package var damage: [JournalDamage] = []
    /// The newest segment's partial last record, if it has one.
    package var tornTail: TornTail?
    /// Intact records in all segments.
    package var records = 0
    /// The highest sequence number the journal recorded as appended (its high-water file), nil
    /// when there is none (or it cannot be read: then ``damage`` says so).
    package var highWater: UInt64?

    /// The first sequence number the journal holds (its oldest segment's), nil without segments.
    package var firstSeq: UInt64? { segments.first?.first }
    /// The highest sequence number the journal may hold (0 without records).
    package var lastSeq: UInt64 { segments.map(\.last).max() ?? 0 }
    /// Whether any segment holds a byte: a daemon has journalled here.
    package var isEmpty: Bool { !segments.contains { $0.bytes > 0 } }

    /// An empty journal (a directory without segments).
    package init() {}
}

/// A part of the journal that cannot be read, and which records it cost: the records between the
/// last intact record before it and the first one after it (records are numbered one by one).
package struct JournalDamage: Sendable, Hashable, CustomStringConvertible {
    /// The segment file's name and the bytes that hold no intact record; nil when nothing is
    /// unreadable but records are missing (a missing segment, records cut out).
    package var segment: String?
    /// The unreadable bytes of ``segment``.
    package var bytes: Range<Int>?
    /// The sequence number of the last intact record before it (one less than the segment's
    /// first at the start of a segment).
    package var after: UInt64
    /// The sequence number of the first intact record after it; nil when none follows (damage
    /// at the end of the newest segment).
    package var before: UInt64?
    /// Why it cannot be read, when it is not plain damage (a record numbered out of order, a
    /// segment that cannot be opened).
    package var note: String?

    /// The records it cost, exactly when ``before`` is known; otherwise at most this many (the
    /// smallest record is 24 bytes).
    package var lost: UInt64 {
        if let before { return before > after ? before - after - 1 : 0 }
        return UInt64(((bytes?.count ?? 0) + 23) / 24)
    }

    /// Whether ``lost`` is exact.
    package var lostIsExact: Bool { before != nil }

    /// A stable name for this damage (the same at every start while the bytes are unchanged),
    /// which the state store keeps once an operator has accepted the loss.
    package var key: String {
        if let segment, let bytes { return "\(segment)@\(bytes.lowerBound)+\(bytes.count)" }
        if let segment { return "\(segment):\(note ?? "unreadable")" }
        return "missing:\(after + 1)-\(before.map { $0 - 1 } ?? after)"
    }

    /// What it is and what it cost, for the log.
    package var description: String {
        var what: String
        if let segment, let bytes {
            what = "\(segment) bytes \(bytes.lowerBound)–\(bytes.upperBound - 1) (\(bytes.count) bytes) hold no intact record"
        } else if let segment {
            what = segment
        } else {
            what = "records are missing between intact records"
        }
        if let note { what += ": " + note }
        let n = lost
        if n == 0 { return what + "; no record lost" }
        if n == 1, before != nil { return what + "; record \(after + 1) lost" }
        if let before { return what + "; records \(after + 1)–\(before - 1) (\(n)) lost" }
        return what + "; the records from \(after + 1) on that they held (at most \(n)) lost"
    }
}

extension IngestJournal {
    /// Reads every segment of the journal in `directory` without changing it and reports what it
    /// holds: intact records (past damage too: a record is found again at the next offset where
    /// a whole one validates), what cannot be read, sequence numbers missing between records or
    /// segments, and a torn tail. A torn tail is a partial record that ends the newest segment
    /// (fewer bytes than its header says, nothing after it); damage anywhere else, including a
    /// whole but corrupt last record, is damage.
    package static func inspect(_ directory: String) -> JournalInspection {
        var found = JournalInspection()
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("journal-") && $0.hasSuffix(".log") }
        var segments: [(first: UInt64, name: String)] = []
        for name in names {
            if let first = UInt64(name.dropFirst(8).dropLast(4), radix: 16), first > 0 {
                segments.append((first, name))
            } else {
                found.damage.append(JournalDamage(segment: name, bytes: nil, after: 0, before: 0, note: "not a segment name"))
            }
        }
        segments.sort { $0.first < $1.first }
        let hw = directory + "/" + IngestJournal.highWaterFile
        if let b = FileManager.default.contents(atPath: hw), !b.isEmpty {
            if let seq = IngestJournal.highWater([UInt8](b)) {
                found.highWater = seq
            } else {
                found.damage.append(
                    JournalDamage(
                        segment: IngestJournal.highWaterFile, bytes: nil, after: 0, before: 0,
                        note: "not a high-water mark; a cut end of the journal cannot be told"))
            }
        }
        // The sequence number the next intact record should have, and damage whose end is not
        // bounded yet (its `before` is the next intact record's, or the next segment's first).
        var expected: UInt64?
        var open: Int?
        func bound(_ seq: UInt64) {
            if let o = open { found.damage[o].before = seq }
            open = nil
        }
        for (n, (first, name)) in segments.enumerated() {
            let path = directory + "/" + name
            let newest = n == segments.count - 1
            if open != nil {
                bound(first)
            } else if let e = expected, first != e {
                if first > e {
                    found.damage.append(JournalDamage(segment: nil, bytes: nil, after: e - 1, before: first))
                } else {
                    found.damage.append(
                        JournalDamage(
                            segment: name, bytes: nil, after: e - 1, before: e, note: "its name says record \(first), the segment before reached \(e - 1)"))
                }
            }
            expected = max(expected ?? first, first)
            var segment = JournalInspection.Segment(path: path, first: first, last: first - 1, records: 0, bytes: 0)
            var trailing: Range<Int>?
            let readable = readSegment(path) { b in
                segment.bytes = b.count
                walk(b) { seq, _, _, start, _ in
                    let e = expected!
                    if seq >= e {
                        if open != nil {
                            bound(seq)
                        } else if seq > e {
                            found.damage.append(JournalDamage(segment: nil, bytes: nil, after: e - 1, before: seq))
                        }
                        expected = seq + 1
                    } else {
                        // Intact but numbered at or below its predecessor: kept for replay (a
                        // shard skips what its user has applied), reported.
                        bound(e)
                        found.damage.append(
                            JournalDamage(segment: name, bytes: nil, after: e - 1, before: e, note: "record \(seq) at byte \(start) follows record \(e - 1)"))
                    }
                    segment.records += 1
                    segment.last = max(segment.last, seq)
                } unreadable: { r in
                    bound(expected!)  // two runs of damage with no record between: one bound is enough
                    if r.upperBound == b.count { trailing = r }
                    open = found.damage.count
                    found.damage.append(JournalDamage(segment: name, bytes: r, after: expected! - 1, before: nil))
                }
                if newest, let t = trailing, isTorn(b, at: t.lowerBound, seq: expected!) {
                    found.damage.removeLast()
                    open = nil
                    found.tornTail = JournalInspection.TornTail(path: path, offset: t.lowerBound, bytes: t.count)
                }
            }
            if !readable {
                let why = String(cString: strerror(errno))
                var st = stat()
                let size = stat(path, &st) == 0 ? Int(st.st_size) : 0
                segment.bytes = size
                found.damage.append(JournalDamage(segment: name, bytes: 0..<size, after: expected! - 1, before: nil, note: "cannot be read: " + why))
                open = found.damage.count - 1
            }
            found.records += segment.records
            segment.last = max(segment.last, expected! - 1)
            found.segments.append(segment)
        }
        // A segment holds nothing at or past the next one's first record (what its release waits for).
        for k in found.segments.indices.dropLast() {
            found.segments[k].last = max(found.segments[k].last, found.segments[k + 1].first - 1)
        }
        // Damage that ends the newest segment: its records are unknown; sequence numbers are
        // kept free up to the most it can have held.
        if let o = open, let last = found.segments.indices.last {
            found.segments[last].last = max(found.segments[last].last, found.damage[o].after + found.damage[o].lost)
        }
        return found
    }

    /// Whether the bytes from `i` to the end are the start of one record numbered `seq` that the
    /// end cuts short, as a write cut by a crash leaves it: at most a header's prefix, or a
    /// header with the magic, that sequence number and plausible lengths saying the record is
    /// longer than what is there.
    static func isTorn(_ b: UnsafeBufferPointer<UInt8>, at i: Int, seq: UInt64) -> Bool {
        var header: [UInt8] = [0x4D, 0x57, 0x4A, 0x31]
        withUnsafeBytes(of: seq.littleEndian) { header += $0 }
        let n = b.count - i
        for k in 0..<min(n, 12) where b[i + k] != header[k] { return false }
        guard n >= 20 else { return true }
        let tl = Int(u32(b, i + 12)), pl = Int(u32(b, i + 16))
        // An MQTT topic has at most 65 535 bytes, a payload at most 256 MiB.
        guard tl <= 65_535, pl <= 256 << 20 else { return false }
        return 24 + tl + pl > n
    }
}
