import MobilityModel
import RuleEngine
import RuleLanguage

extension Engine {
    /// The firing instance of `user`'s alerts whose instance id is `id`, nil when none fires with it.
    func firingInstance(user: String, id: String) -> (rule: AlertRule, activeSince: Int64, firedAt: Int64)? {
        guard let st = state(of: user) else { return nil }
        let names = alertNames
        for (j, sm) in st.alertStates.enumerated() {
            guard j < names.count, case .firing(let since, let fired, _, _) = sm.state,
                AlertTransition.stableID(rule: names[j], user: user, activeSince: Timestamp(milliseconds: since)) == id,
                let rule = program.alerts.first(where: { $0.name == names[j] })
            else { continue }
            return (rule, since, fired)
        }
        return nil
    }
}
