import CZlib
import Foundation

/// A pull source of bytes: a plain file, or one deflated entry of a zip archive inflated on the fly.
/// Memory stays constant whatever the file size.
final class ByteSource {
    private let handle: FileHandle
    private var remaining: UInt64?  // compressed bytes left for a zip entry
    private var inflating = false
    private var stream = z_stream()
    private var input = [UInt8]()
    private var inputOffset = 0
    private var finished = false

    /// Opens a file; for `.zip`, the first entry whose name ends with `entrySuffix`.
    init(path: String, entrySuffix: String = "export.xml") throws {
        guard let h = FileHandle(forReadingAtPath: path) else { throw ExportError("cannot open \(path)") }
        handle = h
        if path.lowercased().hasSuffix(".zip") { try openZipEntry(suffix: entrySuffix) }
    }

    deinit {
        if inflating { inflateEnd(&stream) }
        handle.closeFile()
    }

    private func readExactly(_ n: Int) -> [UInt8] { [UInt8](handle.readData(ofLength: n)) }

    private static func le(_ b: [UInt8], _ o: Int, _ n: Int) -> UInt64 {
        var v: UInt64 = 0
        for k in (0..<n).reversed() { v = v << 8 | UInt64(b[o + k]) }
        return v
    }

    /// Finds the entry through the central directory (zip64 aware), then seeks to its data.
    private func openZipEntry(suffix: String) throws {
        let size = handle.seekToEndOfFile()
        let tail = UInt64(min(size, 65_557))
        handle.seek(toFileOffset: size - tail)
        let t = readExactly(Int(tail))
        guard let eocd = stride(from: t.count - 22, through: 0, by: -1).first(where: { t[$0] == 0x50 && t[$0 + 1] == 0x4b && t[$0 + 2] == 5 && t[$0 + 3] == 6 })
        else {
            throw ExportError("not a zip archive (no end of central directory)")
        }
        var cdOffset = ByteSource.le(t, eocd + 16, 4), cdEntries = ByteSource.le(t, eocd + 10, 2)
        if cdOffset == 0xFFFF_FFFF || cdEntries == 0xFFFF, eocd >= 20, t[eocd - 20] == 0x50, t[eocd - 19] == 0x4b, t[eocd - 18] == 6, t[eocd - 17] == 7 {
            // zip64 end of central directory locator → record
            handle.seek(toFileOffset: ByteSource.le(t, eocd - 12, 8))
            let z = readExactly(56)
            guard z.count == 56, z[0] == 0x50, z[1] == 0x4b, z[2] == 6, z[3] == 6 else { throw ExportError("bad zip64 record") }
            cdEntries = ByteSource.le(z, 32, 8)
            cdOffset = ByteSource.le(z, 48, 8)
        }
        handle.seek(toFileOffset: cdOffset)
        for _ in 0..<cdEntries {
            let h = readExactly(46)
            guard h.count == 46, h[0] == 0x50, h[1] == 0x4b, h[2] == 1, h[3] == 2 else { throw ExportError("bad zip central directory") }
            let method = ByteSource.le(h, 10, 2)
            var compressed = ByteSource.le(h, 20, 4), uncompressed = ByteSource.le(h, 24, 4)
            let nameLen = Int(ByteSource.le(h, 28, 2)), extraLen = Int(ByteSource.le(h, 30, 2)), commentLen = Int(ByteSource.le(h, 32, 2))
            var local = ByteSource.le(h, 42, 4)
            let name = String(decoding: readExactly(nameLen), as: UTF8.self)
            let extra = readExactly(extraLen)
            _ = readExactly(commentLen)
            var k = 0
            while k + 4 <= extra.count {
                let id = ByteSource.le(extra, k, 2), len = Int(ByteSource.le(extra, k + 2, 2))
                if id == 1 {  // zip64 extended information, fields present only when the 32-bit one is saturated
                    var o = k + 4
                    if uncompressed == 0xFFFF_FFFF, o + 8 <= extra.count { uncompressed = ByteSource.le(extra, o, 8); o += 8 }
                    if compressed == 0xFFFF_FFFF, o + 8 <= extra.count { compressed = ByteSource.le(extra, o, 8); o += 8 }
                    if local == 0xFFFF_FFFF, o + 8 <= extra.count { local = ByteSource.le(extra, o, 8) }
                }
                k += 4 + len
            }
            guard name.hasSuffix(suffix), !name.hasSuffix("_cda.xml") else { continue }
            handle.seek(toFileOffset: local)
            let lh = readExactly(30)
            guard lh.count == 30, lh[0] == 0x50, lh[1] == 0x4b, lh[2] == 3, lh[3] == 4 else { throw ExportError("bad zip local header") }
            _ = readExactly(Int(ByteSource.le(lh, 26, 2)) + Int(ByteSource.le(lh, 28, 2)))
            remaining = compressed
            switch method {
            case 0: return
            case 8:
                guard mw_inflate_init_raw(&stream) == Z_OK else { throw ExportError("zlib initialisation failed") }
                inflating = true
                return
            default: throw ExportError("zip entry \(name) uses compression method \(method); only stored and deflate are supported")
            }
        }
        throw ExportError("no entry ending in \(suffix) in the archive")
    }

    /// Fills `buffer` with up to `count` bytes; 0 at the end.
    func read(into buffer: UnsafeMutablePointer<UInt8>, count: Int) throws -> Int {
        if finished { return 0 }
        if !inflating {
            var want = count
            if let r = remaining { want = Int(min(UInt64(count), r)) }
            if want == 0 { finished = true; return 0 }
            let d = handle.readData(ofLength: want)
            if d.isEmpty { finished = true; return 0 }
            d.copyBytes(to: buffer, count: d.count)
            if remaining != nil { remaining! -= UInt64(d.count) }
            return d.count
        }
        while true {
            if inputOffset >= input.count, remaining! > 0 {
                input = readExactly(Int(min(65_536, remaining!)))
                inputOffset = 0
                remaining! -= UInt64(input.count)
                if input.isEmpty { throw ExportError("truncated zip entry") }
            }
            let avail = input.count - inputOffset
            let (rc, produced, consumed): (Int32, Int, Int) = input.withUnsafeMutableBufferPointer { inBuf in
                stream.next_in = inBuf.baseAddress.map { $0.advanced(by: inputOffset) }
                stream.avail_in = UInt32(avail)
                stream.next_out = buffer
                stream.avail_out = UInt32(count)
                let rc = inflate(&stream, Z_NO_FLUSH)
                return (rc, count - Int(stream.avail_out), avail - Int(stream.avail_in))
            }
            inputOffset += consumed
            if rc == Z_STREAM_END { finished = true; return produced }
            guard rc == Z_OK || rc == Z_BUF_ERROR else { throw ExportError("corrupt deflate data (zlib \(rc))") }
            if produced > 0 { return produced }
            if avail == 0 && remaining! == 0 { throw ExportError("truncated zip entry") }
        }
    }
}

/// An export that cannot be read.
package struct ExportError: Error, CustomStringConvertible, Sendable {
    /// What is wrong with the export, e.g. `truncated zip entry`.
    package let description: String
    init(_ d: String) { description = d }
}
