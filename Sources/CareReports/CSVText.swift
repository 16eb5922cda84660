/// RFC 4180 text: records end with CRLF, fields are separated by commas, and a field holding a
/// comma, a double quote, CR or LF is enclosed in double quotes with its double quotes doubled.
/// An unknown value is an empty field. No byte-order mark, no locale: what pandas' `read_csv`
/// and R's `read.csv` read with their defaults.
package enum CSVText {
    /// One field as written.
    package static func field(_ value: String?) -> String {
        guard let value else { return "" }
        guard value.utf8.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0D || $0 == 0x0A }) else { return value }
        var out = "\""
        for c in value.unicodeScalars {
            if c == "\"" { out += "\"\"" } else { out.unicodeScalars.append(c) }
        }
        return out + "\""
    }

    /// One record: the fields, quoted where needed, then CRLF.
    package static func record(_ fields: [String?]) -> String {
        fields.map(field).joined(separator: ",") + "\r\n"
    }

    /// A list of values in one field, separated by `;`, with `\` and `;` inside a value escaped
    /// by a `\`: `fall;note` is two values, `a\;b` one. Nil for an empty list.
    package static func list(_ values: [String]) -> String? {
        guard !values.isEmpty else { return nil }
        return values.map { v in
            guard v.utf8.contains(where: { $0 == 0x3B || $0 == 0x5C }) else { return v }
            var out = ""
            for c in v.unicodeScalars {
                if c == ";" || c == "\\" { out += "\\" }
                out.unicodeScalars.append(c)
            }
            return out
        }.joined(separator: ";")
    }
}
