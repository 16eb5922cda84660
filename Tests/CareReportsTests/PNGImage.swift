import CZlib

/// Just enough of PNG to tell a blank screenshot from a drawn one: the header, the IDAT stream
/// inflated with zlib, the scanline filters undone (8-bit RGB or RGBA, not interlaced).
struct PNGImage {
    let width: Int
    let height: Int
    /// Bytes per pixel (3 or 4).
    let channels: Int
    /// The unfiltered pixels, row after row.
    let pixels: [UInt8]

    struct DecodeError: Error, CustomStringConvertible {
        var description: String
    }

    init(_ data: [UInt8]) throws {
        guard data.count > 33, data[0..<8].elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else { throw DecodeError(description: "not a PNG") }
        func be32(_ i: Int) -> Int { Int(data[i]) << 24 | Int(data[i + 1]) << 16 | Int(data[i + 2]) << 8 | Int(data[i + 3]) }
        var i = 8, idat: [UInt8] = []
        var w = 0, h = 0, depth = 0, colour = 0, interlace = 0
        while i + 8 <= data.count {
            let len = be32(i), type = String(decoding: data[(i + 4)..<(i + 8)], as: UTF8.self)
            guard i + 12 + len <= data.count else { throw DecodeError(description: "truncated chunk \(type)") }
            let body = data[(i + 8)..<(i + 8 + len)]
            if type == "IHDR" {
                w = be32(i + 8)
                h = be32(i + 12)
                depth = Int(body[body.startIndex + 8])
                colour = Int(body[body.startIndex + 9])
                interlace = Int(body[body.startIndex + 12])
            } else if type == "IDAT" {
                idat += body
            } else if type == "IEND" {
                break
            }
            i += 12 + len
        }
        guard depth == 8, colour == 2 || colour == 6, interlace == 0, w > 0, h > 0 else {
            throw DecodeError(description: "unsupported PNG: depth \(depth), colour type \(colour), interlace \(interlace)")
        }
        let bpp = colour == 6 ? 4 : 3, stride = w * bpp
        // The zlib stream without its 2-byte header, inflated raw (the Adler-32 trailer is ignored).
        var raw = [UInt8](repeating: 0, count: (stride + 1) * h)
        var stream = z_stream()
        guard mw_inflate_init_raw(&stream) == Z_OK else { throw DecodeError(description: "inflateInit failed") }
        defer { inflateEnd(&stream) }
        var input = Array(idat.dropFirst(2))
        let rc = input.withUnsafeMutableBufferPointer { inp in
            raw.withUnsafeMutableBufferPointer { out in
                stream.next_in = inp.baseAddress
                stream.avail_in = UInt32(inp.count)
                stream.next_out = out.baseAddress
                stream.avail_out = UInt32(out.count)
                return inflate(&stream, Z_FINISH)
            }
        }
        guard rc == Z_STREAM_END || (rc == Z_BUF_ERROR && stream.avail_out == 0) || rc == Z_OK, stream.avail_out == 0 else {
            throw DecodeError(description: "inflate failed (\(rc))")
        }
        var px = [UInt8](repeating: 0, count: stride * h)
        for y in 0..<h {
            let filter = raw[y * (stride + 1)]
            for x in 0..<stride {
                let a = x >= bpp ? Int(px[y * stride + x - bpp]) : 0
                let b = y > 0 ? Int(px[(y - 1) * stride + x]) : 0
                let c = x >= bpp && y > 0 ? Int(px[(y - 1) * stride + x - bpp]) : 0
                let v = Int(raw[y * (stride + 1) + 1 + x])
                let predictor: Int
                switch filter {
                case 0: predictor = 0
                case 1: predictor = a
                case 2: predictor = b
                case 3: predictor = (a + b) / 2
                case 4:
                    let p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c)
                    predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c
                default: throw DecodeError(description: "bad filter \(filter) on row \(y)")
                }
                px[y * stride + x] = UInt8((v + predictor) & 0xFF)
            }
        }
        width = w
        height = h
        channels = bpp
        pixels = px
    }

    /// The RGB value of pixel (x, y).
    func rgb(_ x: Int, _ y: Int) -> UInt32 {
        let o = (y * width + x) * channels
        return UInt32(pixels[o]) << 16 | UInt32(pixels[o + 1]) << 8 | UInt32(pixels[o + 2])
    }

    /// How many distinct RGB values the image holds.
    var distinctColours: Int {
        var seen = Set<UInt32>()
        for y in 0..<height { for x in 0..<width { seen.insert(rgb(x, y)) } }
        return seen.count
    }
}
