import MobilityModel
import RuleLanguage

/// The words of a transition: its headline and details rendered from the rule's templates, and
/// the local days every view shows for it.
extension Engine {
    /// The local days of an instance: the day its condition first held and the day it fired. A
    /// daily rule's instants are the start of its first true day and the local midnight that ends
    /// the evaluated day (so the day before it); a per-sample rule's are sample ends, in the
    /// user's calendar. The same instance gives the same days in each of its transitions.
    static func localDays(since: Int64, fired: Int64, daily: Bool, calendar: LocalCalendar) -> (since: CivilDate, fired: CivilDate) {
        let s = calendar.day(of: Timestamp(milliseconds: since))
        let f = calendar.day(of: Timestamp(milliseconds: daily ? fired - 1 : fired))
        return (CivilDate(dayNumber: s), CivilDate(dayNumber: max(f, s)))
    }

    /// Renders the parts of template `slot` (``CompiledRules/templateSlots(_:)``) of the alert
    /// being evaluated (`ev.alert`) on `day`: values in their units, durations in words, an
    /// unknown value as its fallback (what is missing), never "unknown".
    static func render(
        _ parts: [TemplatePart], slot: Int, rule: AlertRule, ev: inout Evaluator, day: DayNumber, days: (since: CivilDate, fired: CivilDate)
    ) -> String {
        var s = ""
        for p in parts {
            switch p {
            case .text(let t): s += t
            case .user: s += ev.user.user
            case .day: s += CivilDate(dayNumber: day).description
            case .rule: s += rule.name
            case .since: s += days.since.description
            case .fired: s += days.fired.description
            case .value(let k, let unit, let decimals, let isBool, let fallback):
                let e = ev.templateNode(ev.alert, slot, k)
                let missing = fallback ?? TemplateText.notEnoughData
                if ev.isText(e) {
                    s += ev.string(e, day) ?? missing
                } else if isBool {
                    s += ev.boolean(e, day).map { $0 ? "yes" : "no" } ?? missing
                } else if let v = ev.number(e, day), v.isFinite {
                    s += TemplateText.quantity(v, unit: unit, decimals: decimals)
                } else {
                    s += missing
                }
            case .choice(let k, let a, let b):
                let chosen = ev.boolean(ev.templateNode(ev.alert, slot, k), day) == true ? a : b
                s += render(chosen, slot: slot, rule: rule, ev: &ev, day: day, days: days)
            }
        }
        return s
    }
}
