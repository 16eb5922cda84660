import CLibDeflate
import Foundation
import Glibc
import Synchronization

/// An append-only journal of accepted MQTT messages, written in the MQTT callback *before* it
/// returns, so the broker's acknowledgement (sent by libmosquitto after the callback) never
/// precedes a copy that survives a crash of the daemon. `write(2)` puts the record in the OS page
/// cache: it survives the process being killed; `syncEvery` bounds what a power loss can take.
///
/// Records: magic "MWJ1", seq (u64), topic length (u32), payload length (u32), topic, payload,
/// CRC-32 of everything before it. Records are self-delimiting and checksummed, so a reader
/// resynchronises after damage at the next record that validates
/// (``inspect(_:)``, IngestJournal+Inspection.swift): a torn tail (the newest segment ending in
/// a partial record, a write a crash cut short) is cut when the journal is opened; damage
/// anywhere else is reported, never cut away.
/// Segments `journal-<first seq>.log` rotate at `segmentBytes`, a new one at every opening, and
/// are deleted once every shard has committed past them.
package final class IngestJournal: Sendable {
    /// One journalled message.
    package struct Entry: Sendable {
        /// The message's sequence number, one more than the message journalled before it.
        package var seq: UInt64
        /// The MQTT topic the message arrived on.
        package var topic: String
        /// The message payload as received.
        package var payload: [UInt8]
    }

    private struct State {
        var fd: Int32 = -1
        var size = 0
        var nextSeq: UInt64 = 1
        var segments: [(first: UInt64, last: UInt64, path: String)] = []
        var sinceSync = 0
    }

    /// The directory holding the journal's segment files.
    package let directory: String
    private let segmentBytes: Int
    private let syncEvery: Int
    private let state = Mutex(State())
    private let queued = Atomic<UInt64>(0)
    /// The high-water file (``recordHighWater()``) and the position it holds.
    private let highWaterFD: Int32
    private let highWater = Atomic<UInt64>(0)
    /// The name of the file in the journal directory that holds the highest sequence number
    /// appended, as last recorded.
    package static let highWaterFile = "high-water"

    /// Opens the journal directory, continuing after the last record; throws when the journal is
    /// damaged anywhere but a torn tail (the daemon decides about damage with ``inspect(_:)`` and
    /// ``init(directory:segmentBytes:syncEvery:opening:numberingAbove:)`` instead).
    package convenience init(directory: String, segmentBytes: Int = 64 << 20, syncEvery: Int = 0) throws {
        let found = IngestJournal.inspect(directory)
        if let d = found.damage.first {
            throw JournalError("the journal in \(directory) is damaged: \(d)" + (found.damage.count > 1 ? " (and \(found.damage.count - 1) more)" : ""))
        }
        try self.init(directory: directory, segmentBytes: segmentBytes, syncEvery: syncEvery, opening: found)
    }

    /// Opens the journal that `found` describes (from ``inspect(_:)`` of the same directory) for
    /// appending: cuts its torn tail, if any, and numbers new records from one past both the
    /// highest sequence number the journal may hold and `floor` (what the state store has
    /// committed), so a new record is never numbered at or below a committed one. Damaged
    /// records are left where they are.
    package init(
        directory: String, segmentBytes: Int = 64 << 20, syncEvery: Int = 0, opening found: JournalInspection, numberingAbove floor: UInt64 = 0
    )
        throws
    {
        self.directory = directory
        self.segmentBytes = segmentBytes
        self.syncEvery = syncEvery
        try PrivateFiles.prepareDirectory(directory)  // 0700: the records are health data
        for s in found.segments { try PrivateFiles.tightenIfPresent(s.path) }
        if let torn = found.tornTail {
            // A write a crash cut short: never acknowledged, and later appends go to a new segment.
            guard truncate(torn.path, off_t(torn.offset)) == 0 else {
                throw JournalError("cannot cut the torn tail of \(torn.path): \(String(cString: strerror(errno)))")
            }
        }
        let last = max(found.lastSeq, found.highWater ?? 0, floor)
        let hw = directory + "/" + IngestJournal.highWaterFile
        highWaterFD = open(hw, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard highWaterFD >= 0 else { throw JournalError("cannot open \(hw): \(String(cString: strerror(errno)))") }
        do { try PrivateFiles.makePrivate(fd: highWaterFD, path: hw) } catch {
            close(highWaterFD)
            throw JournalError("\(error)")
        }
        state.withLock { st in
            st.nextSeq = last + 1
            st.segments = found.segments.map { (first: $0.first, last: $0.last, path: $0.path) }
        }
        queued.store(last, ordering: .relaxed)
        highWater.store(found.highWater ?? 0, ordering: .relaxed)
        recordHighWater()
    }

    deinit {
        state.withLock { if $0.fd >= 0 { close($0.fd) } }
        close(highWaterFD)
    }

    /// Records the highest sequence number appended (or numbered past) in the high-water file,
    /// when it moved: 16 bytes written in place ("MWH1", the number, a CRC-32), not synced. Called
    /// from a timer off the append path, every few milliseconds: a journal later cut short below
    /// it (a truncated or deleted newest segment) is then found at start (``inspect(_:)``), where
    /// the records past what the store applied would otherwise look as if never received.
    /// Returns false when the write failed (the mark then lags; nothing else is affected).
    @discardableResult
    package func recordHighWater() -> Bool {
        let last = lastSeq
        guard last > highWater.load(ordering: .relaxed) else { return true }
        var b: [UInt8] = [0x4D, 0x57, 0x48, 0x31]
        withUnsafeBytes(of: last.littleEndian) { b += $0 }
        let crc = b.withUnsafeBufferPointer { libdeflate_crc32(0, $0.baseAddress, 12) }
        withUnsafeBytes(of: crc.littleEndian) { b += $0 }
        guard pwrite(highWaterFD, b, 16, 0) == 16 else { return false }
        highWater.store(last, ordering: .relaxed)
        return true
    }

    /// The position in a high-water file's 16 bytes; nil when they are not one.
    static func highWater(_ b: [UInt8]) -> UInt64? {
        guard b.count == 16, b[0] == 0x4D, b[1] == 0x57, b[2] == 0x48, b[3] == 0x31 else { return nil }
        let crc = b.withUnsafeBufferPointer { libdeflate_crc32(0, $0.baseAddress, 12) }
        guard b[12..<16].withUnsafeBytes({ $0.loadUnaligned(as: UInt32.self) }) == crc.littleEndian else { return nil }
        return b[4..<12].withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
    }

    static func segmentPaths(_ dir: String) -> [(UInt64, String)] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
            .filter { $0.hasPrefix("journal-") && $0.hasSuffix(".log") }
            .compactMap { name -> (UInt64, String)? in
                guard let first = UInt64(name.dropFirst(8).dropLast(4), radix: 16) else { return nil }
                return (first, dir + "/" + name)
            }
            .sorted { $0.0 < $1.0 }
    }

    /// The sequence number of the last appended record.
    package var lastSeq: UInt64 { state.withLock { $0.nextSeq - 1 } }

    /// Appends a message and returns its sequence number. Throws when the disk refuses it.
    package func append(topic: String, payload: [UInt8]) throws -> UInt64 {
        try state.withLock { st in
            if st.fd < 0 || st.size >= segmentBytes {
                if st.fd >= 0 { close(st.fd); st.fd = -1 }
                let path = directory + "/journal-" + String(format: "%016llx", st.nextSeq) + ".log"
                let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
                guard fd >= 0 else { throw JournalError("cannot open \(path): \(String(cString: strerror(errno)))") }
                // 0600 whatever the umask (open's mode is reduced by it, never widened).
                do { try PrivateFiles.makePrivate(fd: fd, path: path) } catch { close(fd); throw JournalError("\(error)") }
                // Only an empty file (a segment whose first write failed) is taken over: records
                // are never appended after bytes of an earlier run.
                var info = stat()
                guard fstat(fd, &info) == 0, info.st_size == 0 else {
                    close(fd)
                    throw JournalError("cannot start segment \(path): the file exists and is not empty")
                }
                st.fd = fd
                st.size = 0
                if st.segments.last?.path != path { st.segments.append((first: st.nextSeq, last: st.nextSeq - 1, path: path)) }
            }
            let seq = st.nextSeq
            // One writev(2) of header, topic, payload and CRC, with no buffer built per message
            // (this runs on the MQTT network thread for every message).
            var topic = topic
            let n = topic.withUTF8 { t in
                payload.withUnsafeBytes { p in
                    withUnsafeTemporaryAllocation(byteCount: 24, alignment: 8) { h in
                        h.storeBytes(of: UInt32(0x314A_574D).littleEndian, toByteOffset: 0, as: UInt32.self)  // "MWJ1"
                        h.storeBytes(of: seq.littleEndian, toByteOffset: 4, as: UInt64.self)
                        h.storeBytes(of: UInt32(t.count).littleEndian, toByteOffset: 12, as: UInt32.self)
                        h.storeBytes(of: UInt32(p.count).littleEndian, toByteOffset: 16, as: UInt32.self)
                        // zlib's CRC-32, by libdeflate's carry-less multiply (≈ 5× fewer cycles on a sync message).
                        var crc = libdeflate_crc32(0, h.baseAddress, 20)
                        if let b = t.baseAddress { crc = libdeflate_crc32(crc, b, t.count) }
                        if let b = p.baseAddress { crc = libdeflate_crc32(crc, b, p.count) }
                        h.storeBytes(of: crc.littleEndian, toByteOffset: 20, as: UInt32.self)
                        return withUnsafeTemporaryAllocation(of: iovec.self, capacity: 4) { iov in
                            iov[0] = iovec(iov_base: h.baseAddress, iov_len: 20)
                            iov[1] = iovec(iov_base: UnsafeMutableRawPointer(mutating: t.baseAddress), iov_len: t.count)
                            iov[2] = iovec(iov_base: UnsafeMutableRawPointer(mutating: p.baseAddress), iov_len: p.count)
                            iov[3] = iovec(iov_base: h.baseAddress! + 20, iov_len: 4)
                            return writev(st.fd, iov.baseAddress, 4)
                        }
                    }
                }
            }
            let expected = 24 + topic.utf8.count + payload.count
            guard n == expected else {
                let why = n < 0 ? String(cString: strerror(errno)) : "short write"
                // Drop a partial record so the file stays readable.
                if n > 0 { ftruncate(st.fd, off_t(st.size)) }
                throw JournalError("journal write failed: \(why)")
            }
            st.size += n
            st.nextSeq += 1
            st.segments[st.segments.count - 1].last = seq
            st.sinceSync += 1
            if syncEvery > 0, st.sinceSync >= syncEvery { fdatasync(st.fd); st.sinceSync = 0 }
            return seq
        }
    }

    /// Records that every message up to `seq` has been handed to its shard's queue.
    package func markQueued(_ seq: UInt64) { queued.store(seq, ordering: .releasing) }
    /// The highest sequence number handed to a shard queue.
    package var queuedThrough: UInt64 { queued.load(ordering: .acquiring) }

    /// Deletes segments whose every record is at or below `seq` (never the one being written).
    package func release(through seq: UInt64) {
        state.withLock { st in
            while st.segments.count > 1, st.segments[0].last <= seq {
                unlink(st.segments[0].path)
                st.segments.removeFirst()
            }
        }
    }

    /// Reads every intact record of the journal in a directory, in order: past damage too (it
    /// resynchronises at the next record that validates), so what follows damage is replayed.
    package static func replay(_ directory: String, _ body: (Entry) -> Void) {
        for (_, path) in segmentPaths(directory) { scan(path) { e, _ in body(e) } }
    }

    static func scan(_ path: String, _ body: (Entry, Int) -> Void) {
        _ = readSegment(path) { b in
            walk(b) { seq, topic, payload, _, end in
                body(
                    Entry(
                        seq: seq, topic: String(decoding: UnsafeBufferPointer(rebasing: b[topic]), as: UTF8.self),
                        payload: Array(UnsafeBufferPointer(rebasing: b[payload]))), end)
            } unreadable: { _ in
            }
        }
    }

    /// Reads a whole segment file into memory (one `read(2)` loop into the buffer, no copy
    /// through `Data`) and lends its bytes to `body`; false when the file cannot be read.
    static func readSegment(_ path: String, _ body: (UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return false }
        let size = Int(st.st_size)
        let bytes = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(size, 1))
        defer { bytes.deallocate() }
        var got = 0
        while got < size {
            let n = read(fd, bytes.baseAddress! + got, size - got)
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return false }
            guard n > 0 else { break }
            got += n
        }
        body(UnsafeBufferPointer(start: bytes.baseAddress, count: got))
        return true
    }

    /// Walks a segment's bytes in order: each intact record (its sequence number, the byte ranges
    /// of its topic and payload, and its start and end offsets) to `body`, and each run of bytes
    /// that holds no intact record to `unreadable`; after such a run the walk goes on at the next
    /// offset where a whole record validates (magic, lengths within the bytes, CRC-32).
    static func walk(
        _ b: UnsafeBufferPointer<UInt8>, _ body: (_ seq: UInt64, _ topic: Range<Int>, _ payload: Range<Int>, _ start: Int, _ end: Int) -> Void,
        unreadable: (Range<Int>) -> Void
    ) {
        var i = 0
        while i < b.count {
            if let r = record(b, at: i) {
                body(r.seq, (i + 20)..<(i + 20 + r.topicBytes), (i + 20 + r.topicBytes)..<(r.end - 4), i, r.end)
                i = r.end
                continue
            }
            let next = resynchronise(b, from: i + 1)
            unreadable(i..<next)
            i = next
        }
    }

    /// The record starting at `i`, when a whole one is there and its CRC-32 matches.
    @inline(__always)
    static func record(_ b: UnsafeBufferPointer<UInt8>, at i: Int) -> (seq: UInt64, topicBytes: Int, end: Int)? {
        guard i + 24 <= b.count, b[i] == 0x4D, b[i + 1] == 0x57, b[i + 2] == 0x4A, b[i + 3] == 0x31 else { return nil }
        let seq = UInt64(u32(b, i + 4)) | UInt64(u32(b, i + 8)) << 32
        let tl = Int(u32(b, i + 12)), pl = Int(u32(b, i + 16))
        let crcAt = i + 20 + tl + pl
        guard crcAt + 4 <= b.count, libdeflate_crc32(0, b.baseAddress! + i, crcAt - i) == u32(b, crcAt) else { return nil }
        return (seq, tl, crcAt + 4)
    }

    @inline(__always)
    static func u32(_ b: UnsafeBufferPointer<UInt8>, _ o: Int) -> UInt32 {
        UInt32(b[o]) | UInt32(b[o + 1]) << 8 | UInt32(b[o + 2]) << 16 | UInt32(b[o + 3]) << 24
    }

    /// The first offset at or after `from` where an intact record starts (the segment's end when
    /// none does): the magic's first byte is found with `memchr`, and each candidate validated whole.
    static func resynchronise(_ b: UnsafeBufferPointer<UInt8>, from: Int) -> Int {
        guard let base = b.baseAddress else { return b.count }
        var k = from
        while k + 24 <= b.count {
            guard let hit = memchr(base + k, 0x4D, b.count - k) else { return b.count }
            let at = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(hit))
            if record(b, at: at) != nil { return at }
            k = at + 1
        }
        return b.count
    }
}

/// A journal I/O failure.
package struct JournalError: Error, CustomStringConvertible, Sendable {
    /// What failed, with the path and the `errno` text where there is one.
    package let description: String
    init(_ d: String) { description = d }
}
