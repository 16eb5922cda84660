import CZlib
import Foundation
import StateStore
import TestSupport
import Testing

/// The journal's records keep zlib's CRC-32 whichever library computes it, so a journal written by
/// an older build (zlib) replays after an upgrade, and one written now replays after a downgrade.
@Suite struct IngestJournalFormatTests {
    private func record(seq: UInt64, topic: String, payload: [UInt8]) -> [UInt8] {
        var r: [UInt8] = Array("MWJ1".utf8)
        withUnsafeBytes(of: seq.littleEndian) { r += $0 }
        withUnsafeBytes(of: UInt32(topic.utf8.count).littleEndian) { r += $0 }
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { r += $0 }
        r += Array(topic.utf8) + payload
        let crc = UInt32(r.withUnsafeBufferPointer { crc32(0, $0.baseAddress, UInt32($0.count)) })
        withUnsafeBytes(of: crc.littleEndian) { r += $0 }
        return r
    }

    private func privateDir() throws -> String {
        let d = TemporaryPath.make("mw-journal")
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return d
    }

    @Test func aRecordWrittenNowCarriesZlibsCRC() throws {
        let dir = try privateDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let j = try IngestJournal(directory: dir)
        // Sizes across libdeflate's short, folded and tail paths.
        let payloads: [[UInt8]] = [
            [], [7], (0..<63).map { UInt8($0) }, (0..<4099).map { UInt8(truncatingIfNeeded: $0 &* 31) }, (0..<70_001).map { UInt8(truncatingIfNeeded: $0 >> 3) }
        ]
        for (i, p) in payloads.enumerated() { _ = try j.append(topic: "mobility/v1/users/u\(i)/samples", payload: p) }
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".log") }
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/" + #require(files.first))))
        let expected = payloads.enumerated().flatMap {
            record(seq: UInt64($0.offset + 1), topic: "mobility/v1/users/u\($0.offset)/samples", payload: $0.element)
        }
        #expect(bytes == expected)
    }

    @Test func aJournalWrittenWithZlibReplaysAndACorruptRecordIsSkippedNotCut() throws {
        let dir = try privateDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var bytes: [UInt8] = []
        for i in 1...5 { bytes += record(seq: UInt64(i), topic: "t/\(i)", payload: Array(String(repeating: "sample \(i) ", count: 300).utf8)) }
        let path = dir + "/journal-" + String(format: "%016llx", 1) + ".log"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]))
        var seen: [UInt64] = []
        IngestJournal.replay(dir) { e in
            seen.append(e.seq)
            #expect(e.payload == Array(String(repeating: "sample \(e.seq) ", count: 300).utf8))
        }
        #expect(seen == [1, 2, 3, 4, 5])
        // One flipped payload byte in the fourth record: replay goes on after it.
        let fourth = bytes.count / 5 * 3 + 100
        bytes[fourth] ^= 0x01
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]))
        seen = []
        IngestJournal.replay(dir) { seen.append($0.seq) }
        #expect(seen == [1, 2, 3, 5])
        // Reading it names the lost record; opening it for appending refuses and leaves it whole.
        #expect(
            IngestJournal.inspect(dir).damage.map(\.description) == [
                "journal-0000000000000001.log bytes \(bytes.count / 5 * 3)–\(bytes.count / 5 * 4 - 1) (\(bytes.count / 5) bytes) hold no intact record; record 4 lost"
            ])
        #expect(throws: JournalError.self) { try IngestJournal(directory: dir) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == bytes.count)
    }
}
