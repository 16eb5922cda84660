/// How urgent an alert is.
package enum Severity: String, CaseIterable, Hashable, Sendable {
    case info, warning, critical
}

/// The published state of an alert.
package enum AlertStatus: String, Hashable, Sendable {
    /// The condition holds (a new instance, or a reminder with `repeat`).
    case firing
    /// The condition was false on evidence, for the rule's `keep_firing_for`.
    case resolved
    /// The instance ended without its condition becoming false: its rule's monitoring window
    /// (`during`) closed, or a reload removed the rule (`reason` says which). Not a recovery.
    case expired

    /// Whether the instance is over (resolved or expired): its retained topic is cleared.
    package var isEnded: Bool { self != .firing }
}

/// One value an alert's condition used, shown to care staff as evidence.
package struct Evidence: Hashable, Sendable {
    /// The name (a `let` or series name).
    package var name: String
    /// The value in `unit`, or nil when unknown (insufficient data).
    package var value: Double?
    /// The display unit's symbol (empty for plain numbers and text, booleans as 0/1 have "bool").
    package var unit: String
    /// The value of a text `let` (`let src = bundle_id`), nil when unknown; `value` is then nil.
    package var text: String?

    /// Creates evidence.
    package init(name: String, value: Double?, unit: String) {
        self.name = name
        self.value = value
        self.unit = unit
    }

    /// Creates evidence of a text value (published as a JSON string `value`).
    package init(name: String, text: String?) {
        self.name = name
        self.value = nil
        self.unit = ""
        self.text = text
    }
}

/// The days an alert's decision read: a span of local days, and how many calendar days it has.
package struct AlertWindow: Hashable, Sendable {
    /// The first day.
    package var from: CivilDate
    /// The last day.
    package var to: CivilDate

    /// Creates a span (`from` on or before `to`).
    package init(from: CivilDate, to: CivilDate) {
        self.from = from
        self.to = to
    }

    /// The number of calendar days from `from` to `to`, both included.
    package var days: Int { Int(to.dayNumber - from.dayNumber) + 1 }

    func write(_ name: String, into w: inout JSONWriter) {
        w.beginObject(name)
        w.string("from", from.description)
        w.string("to", to.description)
        w.number("days", Double(days))
        w.endObject()
    }

    static func parse(_ v: JSONValue?) -> AlertWindow? {
        guard let v, case .string(let a)? = v["from"], case .string(let b)? = v["to"],
            let from = CivilDate(parsing: Substring(a)), let to = CivilDate(parsing: Substring(b)), from.dayNumber <= to.dayNumber
        else { return nil }
        return AlertWindow(from: from, to: to)
    }
}

/// An alert transition: what is published on `users/{user}/alerts/{rule}`.
package struct AlertTransition: Hashable, Sendable {
    /// Stable id: the same alert (rule, user, active-since) always has the same id.
    package var id: String
    /// The rule that fired.
    package var rule: String
    /// The user it is about.
    package var user: String
    /// The rule's severity.
    package var severity: Severity
    /// Firing or resolved.
    package var status: AlertStatus
    /// When the condition started to hold (the start of the first true day, or the sample's end).
    package var activeSince: Timestamp
    /// When it fired.
    package var firedAt: Timestamp
    /// When it resolved, for resolved transitions.
    package var resolvedAt: Timestamp?
    /// When it expired, for expired transitions.
    package var expiredAt: Timestamp?
    /// When the instance ended: ``resolvedAt`` or ``expiredAt``; nil while firing.
    package var endedAt: Timestamp? { resolvedAt ?? expiredAt }
    /// The local day that was evaluated.
    package var day: CivilDate
    /// The user's local day the instance became active (its condition first held): every view
    /// shows this date as the alert's start, never an instant in another zone.
    package var activeSinceDay: CivilDate
    /// The user's local day the instance fired.
    package var firedDay: CivilDate
    /// The user's local day it resolved or expired; nil while firing.
    package var endedDay: CivilDate?
    /// One line for care staff (at most ``headlineLimit`` characters): where the patient is,
    /// against what, since when, in the report's display units.
    package var headline: String
    /// The statistics behind the headline (the rule's `details`); may be empty.
    package var details: String
    /// Labels, sorted by key.
    package var labels: [(String, String)]
    /// The values the condition used.
    package var evidence: [Evidence]
    /// Annotations in reach of the evaluated day (kind and dates).
    package var annotations: [String]
    /// The trailing days the condition read, up to the evaluated day (its windows, cut at the
    /// segment start); nil when it reads no window (published only when set).
    package var window: AlertWindow?
    /// The days the condition's `before:` windows read (a pre-event baseline); nil when none.
    package var baselineWindow: AlertWindow?
    /// True for a reminder of an alert that is still firing (`repeat`).
    package var isRepeat: Bool
    /// Why a transition happened when it was not the rule's condition, for expired transitions:
    /// `window_ended` (the rule's monitoring window closed while it fired) or `rule_removed` (a
    /// reload removed the rule); nil otherwise.
    package var reason: String?
    /// The acknowledgement of a firing instance (set by the daemon, never by the engine).
    package var acknowledged: AlertAcknowledgement?
    /// The silences in force for this transition (set by the daemon, never by the engine); nil
    /// when none: then the payload has no `silencedBy`.
    package var silencedBy: [String]?

    /// The most characters a headline has.
    package static let headlineLimit = 120

    /// Creates a transition. The local days default to `day` (fired and, when ended, ended on
    /// the evaluated day; active since it).
    package init(
        id: String, rule: String, user: String, severity: Severity, status: AlertStatus, activeSince: Timestamp,
        firedAt: Timestamp, resolvedAt: Timestamp?, day: CivilDate, headline: String, details: String = "",
        labels: [(String, String)], evidence: [Evidence], annotations: [String], isRepeat: Bool = false, reason: String? = nil,
        activeSinceDay: CivilDate? = nil, firedDay: CivilDate? = nil, endedDay: CivilDate? = nil
    ) {
        self.id = id
        self.rule = rule
        self.user = user
        self.severity = severity
        self.status = status
        self.activeSince = activeSince
        self.firedAt = firedAt
        self.resolvedAt = resolvedAt
        self.day = day
        self.activeSinceDay = activeSinceDay ?? firedDay ?? day
        self.firedDay = firedDay ?? day
        self.endedDay = endedDay ?? (status == .firing ? nil : day)
        self.headline = headline
        self.details = details
        self.labels = labels
        self.evidence = evidence
        self.annotations = annotations
        self.isRepeat = isRepeat
        self.reason = reason
    }

    /// The `reason` of an instance that expired because its rule's monitoring window closed.
    package static let windowEnded = "window_ended"
    /// The `reason` of a resolved transition that withdraws an alert: a late timeline entry or
    /// late samples re-evaluated the user's days and the alert does not hold on them.
    package static let revised = "revised"
    /// Whether this transition withdraws its alert (a resolution with reason ``revised``).
    package var isWithdrawal: Bool { status == .resolved && reason == AlertTransition.revised }
    /// The headline of a withdrawn alert (its details are the rule's, as of the last evaluated day).
    package static let withdrawnHeadline = "Withdrawn: re-evaluated with a late entry or late data, this alert does not hold"
    /// The `reason` of an instance that expired because a reload removed its rule.
    package static let ruleRemoved = "rule_removed"

    /// Equal when the published payloads are equal.
    package static func == (a: AlertTransition, b: AlertTransition) -> Bool { a.json == b.json }
    /// Hashes the published payload, as `==` compares it.
    package func hash(into h: inout Hasher) { h.combine(json) }

    /// The stable id of an alert instance: FNV-1a 64 of rule, user and active-since, in hex.
    package static func stableID(rule: String, user: String, activeSince: Timestamp) -> String {
        var h = FNV1a64()
        h.combine(rule)
        h.combine(0x7c)
        h.combine(user)
        h.combine(0x7c)
        h.combine(String(activeSince.milliseconds))
        return h.paddedHex
    }

    /// The JSON payload (deterministic member order), as text.
    package var json: String { String(decoding: jsonBytes, as: UTF8.self) }

    /// The JSON payload as the bytes that are published.
    package var jsonBytes: [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.string("id", id)
        w.string("rule", rule)
        w.string("user", user)
        w.string("severity", severity.rawValue)
        w.string("status", status.rawValue)
        w.string("day", day.description)
        w.string("activeSince", activeSince.description)
        w.string("firedAt", firedAt.description)
        if let resolvedAt { w.string("resolvedAt", resolvedAt.description) }
        if let expiredAt { w.string("expiredAt", expiredAt.description) }
        w.string("activeSinceDay", activeSinceDay.description)
        w.string("firedDay", firedDay.description)
        if let endedDay { w.string(status == .expired ? "expiredDay" : "resolvedDay", endedDay.description) }
        if isRepeat { w.bool("repeat", true) }
        if let reason { w.string("reason", reason) }
        acknowledged?.write(into: &w)
        if let silencedBy {
            w.beginArray("silencedBy")
            for id in silencedBy { w.string(nil, id) }
            w.endArray()
        }
        w.string("headline", headline)
        w.string("details", details)
        w.string("summary", headline)
        w.beginObject("labels")
        for (k, v) in labels { w.string(k, v) }
        w.endObject()
        w.beginObject("evidence")
        for e in evidence {
            w.beginObject(e.name)
            if let t = e.text { w.string("value", t) } else if let v = e.value { w.number("value", (v * 1e6).rounded() / 1e6) } else { w.null("value") }
            w.string("unit", e.unit)
            w.endObject()
        }
        w.endObject()
        w.beginArray("annotations")
        for a in annotations { w.string(nil, a) }
        w.endArray()
        window?.write("window", into: &w)
        baselineWindow?.write("baselineWindow", into: &w)
        w.endObject()
        return w.bytes
    }
}

/// One value of a recorded series (a user-day's are published together: ``DailySeries``).
package struct SeriesPoint: Hashable, Sendable {
    /// The user it is about.
    package var user: String
    /// The series' name (its rule).
    package var name: String
    /// The user's local day the value is of.
    package var day: CivilDate
    /// The value in `unit`, nil when missing.
    package var value: Double?
    /// The unit `value` is in (the rule's display unit).
    package var unit: String
    /// True when late data changed an already published day.
    package var revised: Bool

    package init(user: String, name: String, day: CivilDate, value: Double?, unit: String, revised: Bool = false) {
        self.user = user
        self.name = name
        self.day = day
        self.value = value
        self.unit = unit
        self.revised = revised
    }

    /// The JSON payload.
    package var json: String {
        var w = JSONWriter()
        w.beginObject()
        w.string("user", user)
        w.string("series", name)
        w.string("day", day.description)
        if let value { w.number("value", (value * 1e6).rounded() / 1e6) } else { w.null("value") }
        w.string("unit", unit)
        if revised { w.bool("revised", true) }
        w.endObject()
        return w.text
    }
}

extension AlertTransition {
    /// Parses an alert payload published by mobilityd (the inverse of ``json``); nil if malformed.
    package static func parse(_ payload: [UInt8]) -> AlertTransition? {
        guard case .success(let v) = JSONValue.parse(payload) else { return nil }
        func str(_ k: String) -> String? { if case .string(let s)? = v[k] { return s }; return nil }
        func time(_ k: String) -> Timestamp? { str(k).flatMap { ISO8601.parse($0)?.0 } }
        // Payloads from before the local days were published: the evaluated day stands in.
        func localDay(_ k: String) -> CivilDate? { str(k).flatMap { CivilDate(parsing: Substring($0)) } }
        guard let id = str("id"), let rule = str("rule"), let user = str("user"), let sev = str("severity").flatMap(Severity.init),
            let status = str("status").flatMap(AlertStatus.init), let day = str("day").flatMap({ CivilDate(parsing: Substring($0)) }),
            let since = time("activeSince"), let fired = time("firedAt")
        else { return nil }
        var labels: [(String, String)] = []
        if case .object(let o)? = v["labels"] { for (k, x) in o { if case .string(let s) = x { labels.append((k, s)) } } }
        var evidence: [Evidence] = []
        if case .object(let o)? = v["evidence"] {
            for (k, x) in o {
                var value: Double?
                if case .number(let n)? = x["value"] { value = n }
                var unit = ""
                if case .string(let u)? = x["unit"] { unit = u }
                if case .string(let t)? = x["value"] { evidence.append(Evidence(name: k, text: t)); continue }
                evidence.append(Evidence(name: k, value: value, unit: unit))
            }
        }
        var notes: [String] = []
        if case .array(let a)? = v["annotations"] { for x in a { if case .string(let s) = x { notes.append(s) } } }
        var a = AlertTransition(
            id: id, rule: rule, user: user, severity: sev, status: status, activeSince: since, firedAt: fired,
            resolvedAt: time("resolvedAt"), day: day, headline: str("headline") ?? str("summary") ?? "", details: str("details") ?? "",
            labels: labels, evidence: evidence, annotations: notes, isRepeat: v["repeat"] == .bool(true), reason: str("reason"),
            activeSinceDay: localDay("activeSinceDay"), firedDay: localDay("firedDay"), endedDay: localDay("resolvedDay") ?? localDay("expiredDay"))
        a.expiredAt = time("expiredAt")
        if let k = v["acknowledged"], case .string(let by)? = k["by"], case .string(let at)? = k["at"], let t = ISO8601.parse(at)?.0 {
            var note: String?
            if case .string(let n)? = k["note"] { note = n }
            a.acknowledged = AlertAcknowledgement(by: by, at: t, note: note)
        }
        a.window = AlertWindow.parse(v["window"])
        a.baselineWindow = AlertWindow.parse(v["baselineWindow"])
        if case .array(let ids)? = v["silencedBy"] {
            a.silencedBy = ids.compactMap { if case .string(let s) = $0 { s } else { nil } }
        }
        return a
    }
}
