import MobilityModel

/// How `mobilityctl alerts` prints: the table of what is firing (like `amtool alert query`) and
/// one line per event for `--follow`, with severity colour only on a terminal. What the alerts
/// and silences say is escaped (``TerminalText``): a row stays one row, and no stored text
/// reaches the terminal as an escape sequence.
struct AlertTable {
    /// ANSI colours; only when stdout is a terminal and NO_COLOR is unset.
    var colour: Bool
    /// Lines are cut to this many characters (the headline gives way, ending in `…`); nil: never.
    var width: Int?

    /// The columns: ID is the instance id `mobilityctl ack --alert` takes; SINCE and FIRED are
    /// the user's local days the instance became active and fired, the same dates the reports
    /// and FHIR show.
    static let header = ["ID", "RULE", "USER", "SEVERITY", "STATE", "SINCE", "FIRED", "HEADLINE"]
    /// The SEVERITY column (coloured).
    static let severityColumn = 3

    /// What staff have done about a firing alert: `acked by NAME` once acknowledged,
    /// `silenced by NAME until TIME` (``minute(_:)``) while a silence holds it (the one that ends last), both when
    /// both, `firing` otherwise.
    static func state(_ a: AlertTransition, silencedBy holding: [Silence]) -> String {
        var parts: [String] = []
        if let ack = a.acknowledged { parts.append("acked by \(ack.by)") }
        if let s = holding.max(by: { ($0.endsAt, $0.id) < ($1.endsAt, $1.id) }) {
            parts.append("silenced by \(s.createdBy) until \(AlertTable.minute(s.endsAt))")
        }
        return parts.isEmpty ? "firing" : parts.joined(separator: ", ")
    }

    /// An instant to the minute, in UTC: `2026-03-07 18:00Z` (staff's actions: acknowledgements,
    /// silences' ends).
    static func minute(_ t: Timestamp) -> String {
        let iso = t.description
        return String(iso.prefix(10)) + " " + String(iso.dropFirst(11).prefix(5)) + "Z"
    }

    /// Most severe first, then by rule, user and id: the same set always prints the same.
    static func sorted(_ alerts: [AlertTransition]) -> [AlertTransition] {
        func rank(_ s: Severity) -> Int { s == .critical ? 0 : s == .warning ? 1 : 2 }
        return alerts.sorted { (rank($0.severity), $0.rule, $0.user, $0.id) < (rank($1.severity), $1.rule, $1.user, $1.id) }
    }

    /// The table: a header and one row per alert, columns padded to their widest cell;
    /// `holding` gives the silences in force for an alert.
    func table(_ alerts: [AlertTransition], holding: (AlertTransition) -> [Silence]) -> String {
        let ordered = AlertTable.sorted(alerts)
        let rows = ordered.map {
            [
                $0.id, $0.rule, $0.user, $0.severity.rawValue, AlertTable.state($0, silencedBy: holding($0)), $0.activeSinceDay.description,
                $0.firedDay.description, $0.headline
            ].map(TerminalText.escaped)
        }
        let last = AlertTable.header.count - 1
        var widths = AlertTable.header.map(\.count)
        for r in rows { for k in 0..<last { widths[k] = max(widths[k], r[k].count) } }
        func line(_ cells: [String], severity: Severity?) -> String {
            var prefix = "", visible = 0
            for k in 0..<last {
                let cell = cells[k].padding(toLength: widths[k], withPad: " ", startingAt: 0) + "  "
                prefix += k == AlertTable.severityColumn && severity != nil ? paint(cell, severity!) : cell
                visible += cell.count
            }
            return prefix + cut(cells[last], room: width.map { $0 - visible })
        }
        var out = line(AlertTable.header, severity: nil) + "\n"
        for (r, a) in zip(rows, ordered) { out += line(r, severity: a.severity) + "\n" }
        return out
    }

    /// One event as it happens: a day, what happened, severity, rule, user, instance id, and
    /// what it says (the headline, or who acknowledged or silenced it).
    func line(_ e: AlertEvent, _ a: AlertTransition) -> String {
        let fields = "\(e.day(a))  \(e.name.padding(toLength: 12, withPad: " ", startingAt: 0))"
        let sev = a.severity.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0) + "  "
        let rest = "\(TerminalText.escaped(a.rule))  \(TerminalText.escaped(a.user))  \(TerminalText.escaped(a.id))  "
        let visible = fields.count + 2 + sev.count + rest.count
        // Green for a resolution; an expiry is not a recovery and stays uncoloured.
        let statusText = colour && e == .resolved ? "\u{1B}[32m\(fields)\u{1B}[0m" : fields
        return statusText + "  " + paint(sev, a.severity) + rest + cut(TerminalText.escaped(e.text(a)), room: width.map { $0 - visible })
    }

    /// `text` in the severity's colour (critical red, warning yellow, info cyan) when colouring.
    func paint(_ text: String, _ s: Severity) -> String {
        guard colour else { return text }
        let code = s == .critical ? "1;31" : s == .warning ? "33" : "36"
        return "\u{1B}[\(code)m\(text)\u{1B}[0m"
    }

    /// `text` cut to `room` characters, the last one `…` when cut (nothing when there is no room).
    func cut(_ text: String, room: Int?) -> String {
        guard let room, text.count > room else { return text }
        return room <= 0 ? "" : String(text.prefix(room - 1)) + "…"
    }
}
