/// A rule file's text with a line table, for turning byte offsets into line and column.
package struct SourceFile: Sendable {
    /// The path as given by the user (shown in diagnostics).
    package let path: String
    /// The text as UTF-8 bytes.
    package let bytes: [UInt8]
    private let lineStarts: [Int]

    package init(path: String, text: String) {
        self.path = path
        self.bytes = Array(text.utf8)
        var starts = [0]
        for (i, b) in bytes.enumerated() where b == 10 { starts.append(i + 1) }
        self.lineStarts = starts
    }

    /// The 1-based line and column (in characters) of a byte offset.
    package func location(of offset: Int) -> (line: Int, column: Int) {
        var lo = 0, hi = lineStarts.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if lineStarts[mid] <= offset { lo = mid } else { hi = mid - 1 }
        }
        let start = lineStarts[lo]
        let prefix = bytes[start..<min(max(offset, start), bytes.count)]
        let col = String(decoding: prefix, as: UTF8.self).count + 1
        return (lo + 1, col)
    }

    /// The text of a 1-based line, without its newline.
    package func line(_ n: Int) -> String {
        guard n >= 1, n <= lineStarts.count else { return "" }
        let s = lineStarts[n - 1]
        var e = n < lineStarts.count ? lineStarts[n] - 1 : bytes.count
        if e > s, bytes[e - 1] == 13 { e -= 1 }
        return String(decoding: bytes[s..<max(s, e)], as: UTF8.self)
    }

    /// The text of a byte range.
    package func text(_ r: Range<Int>) -> String { String(decoding: bytes[r.clamped(to: 0..<bytes.count)], as: UTF8.self) }
}

/// A byte range in a source file.
package struct SourceRange: Hashable, Sendable {
    /// Index of the file in the program's file list.
    package var file: Int
    /// Byte offsets.
    package var range: Range<Int>

    package init(file: Int, _ range: Range<Int>) {
        self.file = file
        self.range = range
    }

    /// The smallest range covering both.
    package func union(_ o: SourceRange) -> SourceRange {
        SourceRange(file: file, min(range.lowerBound, o.range.lowerBound)..<max(range.upperBound, o.range.upperBound))
    }
}
