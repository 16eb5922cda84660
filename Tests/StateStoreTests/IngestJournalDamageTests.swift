import Foundation
import StateStore
import TestSupport
import Testing

/// A damaged journal is never cut: the journal tells a torn tail (a write a crash cut short, at
/// the very end) from damage anywhere else, replays every intact record after damage, and says
/// exactly which records the damage cost.
@Suite struct IngestJournalDamageTests {
    private func privateDir() throws -> String {
        let d = TemporaryPath.make("mw-journal")
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return d
    }

    private func topic(_ i: Int) -> String { "mobility/v1/users/u\(i % 7)/samples" }
    private func payload(_ i: Int) -> [UInt8] { Array("{\"id\":\"s\(i)\",\"value\":\(i)}".utf8) + [UInt8](repeating: UInt8(i % 251), count: i % 90) }

    /// A journal of `count` records (one segment unless `segmentBytes` says otherwise).
    private func journal(_ count: Int, segmentBytes: Int = 64 << 20) throws -> String {
        let dir = try privateDir()
        let j = try IngestJournal(directory: dir, segmentBytes: segmentBytes)
        for i in 1...count { #expect(try j.append(topic: topic(i), payload: payload(i)) == UInt64(i)) }
        return dir
    }

    private func segments(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".log") }.sorted().map { dir + "/" + $0 }
    }

    private func size(_ path: String) -> Int { ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? -1 }

    private func flip(_ path: String, at offset: Int, count: Int) throws {
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        for k in offset..<(offset + count) { bytes[k] ^= 0xA5 }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    private func replayed(_ dir: String) -> [UInt64] {
        var seen: [UInt64] = []
        IngestJournal.replay(dir) { e in
            seen.append(e.seq)
            #expect(e.topic == topic(Int(e.seq)) && e.payload == payload(Int(e.seq)), "record \(e.seq) comes back byte for byte")
        }
        return seen
    }

    /// 16 bytes flipped in the middle of a segment of 2 000 acknowledged records: the records
    /// after the damage are replayed, opening the journal refuses instead of cutting the segment
    /// at the damage (which deleted every intact record after it and numbered new records below
    /// positions already committed), and the file keeps every byte.
    @Test func damageInTheMiddleIsNeverCutAndWhatFollowsItIsReplayed() throws {
        let dir = try journal(2000)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try #require(segments(dir).first)
        let before = size(path)
        try flip(path, at: before / 2, count: 16)
        let seen = replayed(dir)
        #expect(seen.count >= 1997 && seen.count <= 1999, "one or two records hold the damage, \(seen.count) replayed")
        #expect(seen.last == 2000 && seen == seen.sorted())
        #expect(throws: (any Error).self) { try IngestJournal(directory: dir) }
        #expect(size(path) == before, "the damaged segment is never cut")
        #expect(replayed(dir) == seen)
    }

    @Test func inspectionSaysExactlyWhichRecordsTheDamageCost() throws {
        let dir = try journal(2000)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try #require(segments(dir).first)
        let before = size(path)
        try flip(path, at: before / 2, count: 16)
        let found = IngestJournal.inspect(dir)
        let d = try #require(found.damage.first)
        #expect(found.damage.count == 1 && found.tornTail == nil)
        let seen = replayed(dir)
        let missing = Set(1...2000).subtracting(seen.map(Int.init)).sorted()
        #expect(d.lostIsExact && d.lost == UInt64(missing.count))
        #expect(d.after == UInt64(missing.first! - 1) && d.before == UInt64(missing.last! + 1))
        #expect(d.segment == (path as NSString).lastPathComponent)
        let bytes = try #require(d.bytes)
        #expect(bytes.contains(before / 2) && bytes.contains(before / 2 + 15))
        #expect(found.records == seen.count && found.lastSeq == 2000)
        let said = missing.count == 1 ? "record \(missing[0]) lost" : "records \(missing.first!)–\(missing.last!) (\(missing.count)) lost"
        #expect(d.description.hasSuffix(said), "\(d)")
        // The same damage has the same key at every reading (an accepted loss is recognised again).
        #expect(IngestJournal.inspect(dir).damage.map(\.key) == [d.key])
    }

    /// A crash in the middle of an append leaves a prefix of the last record: that is cut when the
    /// journal is opened, without a word of damage. A whole last record that does not check is
    /// damage, not a torn tail.
    @Test func aTornTailIsCutButACorruptLastRecordIsDamage() throws {
        let dir = try journal(50)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try #require(segments(dir).first)
        let whole = size(path)
        let lastRecord = 24 + topic(50).utf8.count + payload(50).count
        // The last record cut short at each kind of place: in the magic, the header, the payload, the CRC.
        for keep in [2, 17, 30, lastRecord - 2] {
            #expect(truncate(path, off_t(whole - lastRecord + keep)) == 0)
            let found = IngestJournal.inspect(dir)
            #expect(found.damage.isEmpty, "cut at \(keep): \(found.damage)")
            #expect(found.tornTail == JournalInspection.TornTail(path: path, offset: whole - lastRecord, bytes: keep))
            #expect(found.lastSeq == 49)
            // Restore the whole record for the next case.
            let j = try IngestJournal(directory: dir, opening: found)
            #expect(size(path) == whole - lastRecord && j.lastSeq == 49)
            let fh = try #require(FileHandle(forWritingAtPath: path))
            fh.seekToEndOfFile()
            fh.write(Data(record(seq: 50)))
            fh.closeFile()
        }
        #expect(size(path) == whole)
        // One byte of the last record's payload flipped: whole length, wrong CRC.
        try flip(path, at: whole - 6, count: 1)
        let found = IngestJournal.inspect(dir)
        #expect(found.tornTail == nil)
        let d = try #require(found.damage.first)
        #expect(d.after == 49 && d.before == nil && !d.lostIsExact && d.lost >= 1)
        // New records are numbered past what the damaged bytes could have held.
        #expect(found.lastSeq >= 50)
        #expect(throws: (any Error).self) { try IngestJournal(directory: dir) }
        #expect(size(path) == whole)
    }

    /// A torn record is only torn at the end of the newest segment: the same partial record in an
    /// older segment is damage (a crash cannot have left it there: each start writes a new segment).
    @Test func aPartialRecordInAnOlderSegmentIsDamage() throws {
        let dir = try journal(200, segmentBytes: 2000)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let files = segments(dir)
        #expect(files.count >= 3)
        let older = files[files.count - 2]
        #expect(truncate(older, off_t(size(older) - 5)) == 0)
        let found = IngestJournal.inspect(dir)
        #expect(found.tornTail == nil)
        let d = try #require(found.damage.first)
        #expect(found.damage.count == 1 && d.lostIsExact && d.lost == 1)
        #expect(found.lastSeq == 200)
    }

    /// A segment deleted from the middle: the records it held are named, and the segments around
    /// it still replay.
    @Test func aMissingSegmentIsDamageWithItsRecords() throws {
        let dir = try journal(200, segmentBytes: 2000)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let files = segments(dir)
        #expect(files.count >= 4)
        let middle = files[1]
        let startOfNext = UInt64(String((files[2] as NSString).lastPathComponent.dropFirst(8).dropLast(4)), radix: 16)!
        let startOfMiddle = UInt64(String((middle as NSString).lastPathComponent.dropFirst(8).dropLast(4)), radix: 16)!
        let gone = Array(startOfMiddle..<startOfNext)
        try FileManager.default.removeItem(atPath: middle)
        let found = IngestJournal.inspect(dir)
        let d = try #require(found.damage.first)
        #expect(found.damage.count == 1 && d.segment == nil && d.after == gone.first! - 1 && d.before == gone.last! + 1 && d.lost == UInt64(gone.count))
        #expect(replayed(dir) == (1...200).map(UInt64.init).filter { !gone.contains($0) })
    }

    /// New records are numbered above the floor the caller gives (what the state store has
    /// committed), even when the journal's own records end lower.
    @Test func newRecordsAreNumberedAboveTheFloor() throws {
        let dir = try journal(30)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let j = try IngestJournal(directory: dir, opening: IngestJournal.inspect(dir), numberingAbove: 500)
        #expect(j.lastSeq == 500 && j.queuedThrough == 500)
        #expect(try j.append(topic: topic(1), payload: payload(1)) == 501)
        // The gap is what a later reading reports, exactly.
        let found = IngestJournal.inspect(dir)
        #expect(found.damage.map(\.key) == ["missing:31-500"])
    }

    /// Files that merely look like segments, and one that cannot be read, are reported, not
    /// trusted and not a crash.
    @Test func oddFilesAreReported() throws {
        let dir = try journal(10)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(FileManager.default.createFile(atPath: dir + "/journal-0000000000000000.log", contents: Data([1, 2, 3])))
        #expect(FileManager.default.createFile(atPath: dir + "/journal-zz.log", contents: Data()))
        let found = IngestJournal.inspect(dir)
        #expect(found.damage.count == 2 && found.records == 10 && found.lastSeq == 10)
    }

    /// What a writer writes for `seq` (the format of IngestJournalFormatTests).
    private func record(seq: Int) -> [UInt8] {
        let dir = (try? privateDir()) ?? ""
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let j = try? IngestJournal(directory: dir, opening: JournalInspection(), numberingAbove: UInt64(seq - 1))
        _ = try? j?.append(topic: topic(seq), payload: payload(seq))
        return segments(dir).first.flatMap { try? [UInt8](Data(contentsOf: URL(fileURLWithPath: $0))) } ?? []
    }
}
