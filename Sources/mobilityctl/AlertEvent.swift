import MobilityModel

/// What happened to an alert instance, as `mobilityctl alerts --follow` prints it: told from the
/// instance's previous message (the retained alert topic carries each of these as a new payload:
/// an acknowledgement republishes the firing message with `acknowledged`, a revision may publish
/// the firing message again unchanged) and the silences in force.
enum AlertEvent: Equatable {
    /// The instance fired.
    case fired
    /// A reminder that it still fires (`repeat`), on the day it was evaluated.
    case reminder
    /// Acknowledged by a member of staff.
    case acknowledged(AlertAcknowledgement)
    /// A silence now holds it.
    case silenced(Silence)
    /// No silence holds it any more (seen at `at`: expired, or ended by hand).
    case unsilenced(at: Timestamp)
    /// Its condition was seen to be false.
    case resolved
    /// Its rule's window ended (or the rule was removed) while it fired.
    case expired
    /// Withdrawn: re-evaluated with late data, it does not hold.
    case withdrawn

    /// The event a message for an instance stands for, given the instance's previous message
    /// (nil: none seen since the start); nil when nothing happened (the same message again).
    static func of(_ a: AlertTransition, after previous: AlertTransition?) -> AlertEvent? {
        if a.isWithdrawal { return .withdrawn }
        switch a.status {
        case .resolved: return previous?.status == .resolved ? nil : .resolved
        case .expired: return previous?.status == .expired ? nil : .expired
        case .firing: break
        }
        guard let previous, previous.status == .firing else { return a.isRepeat ? .reminder : .fired }
        if let ack = a.acknowledged, previous.acknowledged != ack { return .acknowledged(ack) }
        if a.isRepeat, !previous.isRepeat || previous.day != a.day { return .reminder }
        return nil
    }

    /// The word printed.
    var name: String {
        switch self {
        case .fired: "firing"
        case .reminder: "reminder"
        case .acknowledged: "acknowledged"
        case .silenced: "silenced"
        case .unsilenced: "unsilenced"
        case .resolved: "resolved"
        case .expired: "expired"
        case .withdrawn: "withdrawn"
        }
    }

    /// The date printed: the user's local day the engine evaluated, or the UTC date a member of
    /// staff acted on (an acknowledgement, a silence's start or end).
    func day(_ a: AlertTransition) -> String {
        switch self {
        case .fired: a.firedDay.description
        case .reminder: a.day.description
        case .resolved, .expired, .withdrawn: (a.endedDay ?? a.day).description
        case .acknowledged(let ack): String(ack.at.description.prefix(10))
        case .silenced(let s): String(s.startsAt.description.prefix(10))
        case .unsilenced(let at): String(at.description.prefix(10))
        }
    }

    /// What the line says after the alert's names.
    func text(_ a: AlertTransition) -> String {
        switch self {
        case .fired, .reminder, .resolved, .expired, .withdrawn: a.headline
        case .acknowledged(let ack): "acknowledged by \(ack.by) at \(AlertTable.minute(ack.at))" + (ack.note.map { ": \($0)" } ?? "")
        case .silenced(let s): "silenced by \(s.createdBy) until \(AlertTable.minute(s.endsAt)): \(s.comment)"
        case .unsilenced: "no silence holds it any more; notifications resume"
        }
    }
}
