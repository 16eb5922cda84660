/// What care staff type and the daemon stores for people to read later: acknowledgement notes,
/// silence comments, timeline notes and entry ids, and the names of who did it.
///
/// One rule for all of them, checked here only: a bound on the UTF-8 length and no control
/// characters (Unicode category Cc: C0 such as ESC and newline, DEL, and C1 such as CSI U+009B).
/// A stored text is printed in tables and audit trails on operators' terminals, where a control
/// character could move the cursor, rewrite what is on the screen or break a row.
package enum StaffText {
    /// Whether `s` holds a control character.
    package static func hasControlCharacters(_ s: String) -> Bool {
        s.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Whether `s` is at most `maxBytes` bytes of UTF-8 without control characters, and not empty
    /// when `required`.
    package static func isValid(_ s: String, maxBytes: Int, required: Bool) -> Bool {
        !(required && s.isEmpty) && s.utf8.count <= maxBytes && !hasControlCharacters(s)
    }

    /// Why `s` is not valid as `field` (quoted as the refusal should name it, e.g. `'note'`), in
    /// the words of a refusal; nil when it is valid.
    package static func problem(_ s: String, field: String, maxBytes: Int, required: Bool) -> String? {
        guard !isValid(s, maxBytes: maxBytes, required: required) else { return nil }
        return required
            ? "\(field) is 1-\(maxBytes) bytes without control characters"
            : "\(field) is at most \(maxBytes) bytes without control characters"
    }
}
