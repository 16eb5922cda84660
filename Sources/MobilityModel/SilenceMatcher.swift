/// One matcher of a silence, as Alertmanager's: a name (`user`, `rule`, `severity` or a label of
/// the rules), a value, equality or a regular expression (``LabelPattern``, anchored), and a
/// negation (`isEqual: false`). An alert without the label has it as `""`, so `team!="x"` matches
/// an alert without a `team` label, and `team=~".*"` matches every alert.
package struct SilenceMatcher: Hashable, Sendable, CustomStringConvertible {
    /// The name matched: `user`, `rule`, `severity` or a label name.
    package let name: String
    /// The value, or the regular expression with `isRegex`.
    package let value: String
    /// `=` / `=~` when true, `!=` / `!~` when false.
    package let isEqual: Bool
    /// Whether `value` is a regular expression.
    package let isRegex: Bool
    /// The compiled expression (with `isRegex`).
    private let pattern: LabelPattern?

    /// Creates a matcher, compiling a regular expression once (never per alert).
    package init(name: String, value: String, isEqual: Bool = true, isRegex: Bool = false) throws(LabelPattern.SyntaxError) {
        self.name = name
        self.value = value
        self.isEqual = isEqual
        self.isRegex = isRegex
        pattern = isRegex ? try LabelPattern(value) : nil
    }

    /// Whether `value` (the alert's, `""` when it has no such label) satisfies the matcher.
    package func matches(_ candidate: String) -> Bool {
        let hit = pattern.map { $0.matches(candidate) } ?? (candidate == value)
        return hit == isEqual
    }

    /// amtool's form: `user="jamie"`, `rule=~"stalled_.*"`, `team!="x"`, `category!~"data-.*"`.
    package var description: String {
        let op = isRegex ? (isEqual ? "=~" : "!~") : (isEqual ? "=" : "!=")
        var v = "\""
        for c in value.unicodeScalars {
            if c == "\"" || c == "\\" { v += "\\" }
            v.unicodeScalars.append(c)
        }
        return name + op + v + "\""
    }

    /// Parses amtool's command-line form `name=value`, `name!=value`, `name=~regex`,
    /// `name!~regex` (the value optionally in double quotes, `\"` and `\\` escaped inside).
    package static func parse(_ text: String) -> Result<SilenceMatcher, LabelPattern.SyntaxError> {
        let scalars = Array(text.unicodeScalars)
        let op = scalars.indices.first { k in
            scalars[k] == "=" || (scalars[k] == "!" && k + 1 < scalars.count && (scalars[k + 1] == "=" || scalars[k + 1] == "~"))
        }
        guard let op else {
            return .failure(.init(description: "'\(text.prefix(60))' is not name=value, name!=value, name=~regex or name!~regex"))
        }
        let nameEnd = op
        let isEqual = scalars[op] == "="
        let isRegex = op + 1 < scalars.count && scalars[op + 1] == "~"
        let valueStart = op + (isEqual && !isRegex ? 1 : 2)
        let name = String(String.UnicodeScalarView(scalars[..<nameEnd]))
        var raw = Array(scalars[valueStart...])
        if raw.count >= 2, raw.first == "\"", raw.last == "\"" {
            raw = Array(raw[1..<(raw.count - 1)])
            var out: [Unicode.Scalar] = []
            var k = 0
            while k < raw.count {
                if raw[k] == "\\", k + 1 < raw.count, raw[k + 1] == "\"" || raw[k + 1] == "\\" { k += 1 }
                out.append(raw[k])
                k += 1
            }
            raw = out
        }
        guard SilenceMatcher.isValidName(name) else {
            return .failure(.init(description: "'\(name.prefix(60))' is not a matcher name (a label name: a-z A-Z 0-9 _, not starting with a digit)"))
        }
        do {
            return .success(try SilenceMatcher(name: name, value: String(String.UnicodeScalarView(raw)), isEqual: isEqual, isRegex: isRegex))
        } catch { return .failure(error) }
    }

    /// Whether `name` is a label name of the rule language (`[A-Za-z_][A-Za-z0-9_]*`, at most 64).
    package static func isValidName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 64, !(48...57).contains(first) else { return false }
        return name.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 95 }
    }

    /// Writes `{"name", "value", "isRegex", "isEqual"}` (Alertmanager's members) as an array element.
    package func write(into w: inout JSONWriter) {
        w.beginObject()
        w.string("name", name)
        w.string("value", value)
        w.bool("isRegex", isRegex)
        w.bool("isEqual", isEqual)
        w.endObject()
    }
}
