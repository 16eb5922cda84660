/// Writes XHTML-compatible markup (HTML and inline SVG) whose every attribute value and text is
/// escaped: callers pass plain strings, never markup, so no user-supplied string can inject any.
struct Markup {
    /// The markup so far.
    private(set) var text = ""

    /// Creates an empty writer with room for about `capacity` bytes.
    init(capacity: Int = 4096) { text.reserveCapacity(capacity) }

    /// `<name a="v"…>`.
    mutating func open(_ name: String, _ attributes: [(String, String)] = []) {
        start(name, attributes)
        text += ">"
    }

    /// `</name>`.
    mutating func close(_ name: String) {
        text += "</"
        text += name
        text += ">"
    }

    /// `<name a="v"…/>`, or `<name …>text</name>` when `text` is given.
    mutating func element(_ name: String, _ attributes: [(String, String)] = [], text content: String? = nil) {
        start(name, attributes)
        if let content {
            text += ">"
            text += XMLText.escape(content)
            close(name)
        } else {
            text += "/>"
        }
    }

    /// `<name a="v"…>text</name>` with a line-break opportunity (`<wbr/>`) after each `_` of
    /// `content`, so that a long name such as `gait_quality_explanation` wraps at its words on a
    /// narrow screen (and copies whole).
    mutating func element(_ name: String, _ attributes: [(String, String)] = [], breakingAfterUnderscores content: String) {
        start(name, attributes)
        text += ">"
        var first = true
        for part in content.split(separator: "_", omittingEmptySubsequences: false) {
            if !first { text += "_<wbr/>" }
            text += XMLText.escape(String(part))
            first = false
        }
        close(name)
    }

    /// Escaped text.
    mutating func add(_ content: String) { text += XMLText.escape(content) }

    /// Markup written by this module's own code (a fixed string with no user data, e.g. the style
    /// sheet or the doctype).
    mutating func trusted(_ markup: StaticString) { text += markup.description }

    /// Appends another writer's markup.
    mutating func append(_ other: Markup) { text += other.text }

    private mutating func start(_ name: String, _ attributes: [(String, String)]) {
        text += "<"
        text += name
        for (k, v) in attributes {
            text += " "
            text += k
            text += "=\""
            text += XMLText.escape(v)
            text += "\""
        }
    }
}
