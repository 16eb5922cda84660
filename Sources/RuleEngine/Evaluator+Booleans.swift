import MobilityModel
import RuleLanguage

extension Evaluator {
    // MARK: Booleans and strings

    mutating func boolean(_ n: Int32, _ d: DayNumber) -> Bool? {
        switch code.nodes[Int(n)] {
        case .bool(let b): return b
        case .not(let x): return boolean(x, d).map { !$0 }
        case .isKnown(let x):
            if code.isBoolean(x) { return boolean(x, d) != nil }
            if code.isString(x) { return string(x, d) != nil }
            return number(x, d) != nil
        case .annotated(let kind, let days):
            let lo = d - DayNumber(days) + 1
            let k = code.strings[Int(kind)]
            return user.events.values.contains { $0.category == .annotation && $0.kind == k && $0.firstDay <= d && $0.lastDay >= lo }
        case .sample(.userEntered): return sample.map { $0.provenance == .userEntered }
        case .sample(.deviceRecorded): return sample.map { $0.provenance == .device }
        case .sample(.calibrated): return sample?.calibrated
        case .startsWith(let a, let b):
            guard let x = string(a, d), let y = string(b, d) else { return nil }
            return x.hasPrefix(y)
        case .local(let slot): return localBoolean(Int(slot), d)
        case .binary(.and, let l, let r):
            let a = boolean(l, d)
            if a == false { return false }
            let b = boolean(r, d)
            if b == false { return false }
            return a == true && b == true ? true : nil
        case .binary(.or, let l, let r):
            let a = boolean(l, d)
            if a == true { return true }
            let b = boolean(r, d)
            if b == true { return true }
            return a == false && b == false ? false : nil
        case .binary(let op, let l, let r):
            if code.isBoolean(l) {
                guard let a = boolean(l, d), let b = boolean(r, d) else { return nil }
                return op == .eq ? a == b : a != b
            }
            if code.isString(l) {
                guard let a = string(l, d), let b = string(r, d) else { return nil }
                return op == .eq ? a == b : a != b
            }
            guard let a = number(l, d), let b = number(r, d) else { return nil }
            switch op {
            case .lt: return a < b
            case .le: return a <= b
            case .gt: return a > b
            case .ge: return a >= b
            case .eq: return a == b
            case .ne: return a != b
            default: return nil
            }
        default: return nil
        }
    }

    mutating func string(_ n: Int32, _ d: DayNumber) -> String? {
        switch code.nodes[Int(n)] {
        case .string(let s): return code.strings[Int(s)]
        case .sample(.bundleID): return sample?.bundleId
        case .local(let slot): return localString(Int(slot), d)
        default: return nil
        }
    }
}
