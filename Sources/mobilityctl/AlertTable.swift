import MobilityModel

/// How `mobilityctl alerts` prints: the table of what is firing (like `amtool alert query`) and
/// one line per transition for `--follow`, with severity colour only on a terminal. What the
/// alerts say is escaped (``TerminalText``): a row stays one row, and no stored text reaches the
/// terminal as an escape sequence.
struct AlertTable {
    /// ANSI colours; only when stdout is a terminal and NO_COLOR is unset.
    var colour: Bool
    /// Lines are cut to this many characters (the headline gives way, ending in `…`); nil: never.
    var width: Int?

    /// The columns: SINCE and FIRED are the user's local days the instance became active and
    /// fired, the same dates the reports and FHIR show.
    static let header = ["RULE", "USER", "SEVERITY", "STATE", "SINCE", "FIRED", "HEADLINE"]

    /// What staff have done about a firing alert, as `amtool` shows a suppressed one:
    /// `acked:NAME` once acknowledged, `silenced` while a silence holds it, `firing` otherwise.
    static func state(_ a: AlertTransition) -> String {
        if let s = a.silencedBy, !s.isEmpty { return "silenced" }
        if let ack = a.acknowledged { return "acked:\(ack.by)" }
        return "firing"
    }

    /// Most severe first, then by rule, user and id: the same set always prints the same.
    static func sorted(_ alerts: [AlertTransition]) -> [AlertTransition] {
        func rank(_ s: Severity) -> Int { s == .critical ? 0 : s == .warning ? 1 : 2 }
        return alerts.sorted { (rank($0.severity), $0.rule, $0.user, $0.id) < (rank($1.severity), $1.rule, $1.user, $1.id) }
    }

    /// The table: a header and one row per alert, columns padded to their widest cell.
    func table(_ alerts: [AlertTransition]) -> String {
        let rows = AlertTable.sorted(alerts).map {
            [
                $0.rule, $0.user, $0.severity.rawValue, AlertTable.state($0), $0.activeSinceDay.description, $0.firedDay.description, $0.headline
            ].map(TerminalText.escaped)
        }
        let last = AlertTable.header.count - 1
        var widths = AlertTable.header.map(\.count)
        for r in rows { for k in 0..<last { widths[k] = max(widths[k], r[k].count) } }
        func line(_ cells: [String], severity: Severity?) -> String {
            var prefix = "", visible = 0
            for k in 0..<last {
                let cell = cells[k].padding(toLength: widths[k], withPad: " ", startingAt: 0) + "  "
                prefix += k == 2 && severity != nil ? paint(cell, severity!) : cell
                visible += cell.count
            }
            return prefix + cut(cells[last], room: width.map { $0 - visible })
        }
        var out = line(AlertTable.header, severity: nil) + "\n"
        for (r, a) in zip(rows, AlertTable.sorted(alerts)) { out += line(r, severity: a.severity) + "\n" }
        return out
    }

    /// One transition as it arrives: its local day, status, severity, rule, user, headline.
    func line(_ a: AlertTransition) -> String {
        let status = a.isRepeat ? "repeat" : a.isWithdrawal ? "withdrawn" : a.status.rawValue
        let time = a.day.description
        let fields = "\(time)  \(status.padding(toLength: 9, withPad: " ", startingAt: 0))"
        let sev = a.severity.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0) + "  "
        let rest = "\(TerminalText.escaped(a.rule))  \(TerminalText.escaped(a.user))  "
        let visible = fields.count + 2 + sev.count + rest.count
        // Green for a resolution; an expiry is not a recovery and stays uncoloured.
        let statusText = colour && a.status == .resolved && !a.isWithdrawal ? "\u{1B}[32m\(fields)\u{1B}[0m" : fields
        return statusText + "  " + paint(sev, a.severity) + rest + cut(TerminalText.escaped(a.headline), room: width.map { $0 - visible })
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
