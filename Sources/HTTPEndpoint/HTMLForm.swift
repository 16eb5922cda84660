/// A form posted as `application/x-www-form-urlencoded`: its fields in order, decoded.
package struct HTMLForm: Sendable {
    /// The fields, `+` read as a space and percent-escapes decoded.
    package var fields: [(name: String, value: String)]

    /// The most fields a form may have.
    package static let maximumFields = 32

    /// Why a body is not a form.
    package struct Problem: Error, Hashable, Sendable {
        /// What is wrong.
        package var message: String
    }

    /// A form without fields.
    package static let empty = HTMLForm(fields: [])

    /// A form of these fields.
    package init(fields: [(name: String, value: String)]) { self.fields = fields }

    /// Parses a body; fields must be valid UTF-8 once decoded.
    package init(parsing body: [UInt8]) throws(Problem) {
        var fields: [(String, String)] = []
        for pair in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let eq = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
            guard let name = Self.decode(pair[..<eq]), let value = Self.decode(eq < pair.endIndex ? pair[(eq + 1)...] : [][...]) else {
                throw Problem(message: "the form is not valid URL-encoded UTF-8")
            }
            fields.append((name, value))
            guard fields.count <= Self.maximumFields else { throw Problem(message: "the form has more than \(Self.maximumFields) fields") }
        }
        self.fields = fields
    }

    /// The value of field `name` (the first, if repeated).
    package func value(_ name: String) -> String? { fields.first { $0.name == name }?.value }

    private static func decode(_ bytes: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            if b == UInt8(ascii: "+") {
                out.append(0x20)
            } else if b == UInt8(ascii: "%") {
                guard i + 2 < bytes.endIndex, let hi = hex(bytes[i + 1]), let lo = hex(bytes[i + 2]) else { return nil }
                out.append(hi << 4 | lo)
                i += 2
            } else {
                out.append(b)
            }
            i += 1
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: b - 0x30
        case 0x41...0x46: b - 0x41 + 10
        case 0x61...0x66: b - 0x61 + 10
        default: nil
        }
    }
}
