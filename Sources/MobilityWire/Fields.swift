import MobilityModel

/// Typed access to an object's fields with specific errors.
struct Fields {
    let v: JSONValue
    init(_ v: JSONValue) { self.v = v }

    mutating func string(_ key: String) -> Result<String, Rejection> {
        switch v[key] {
        case .string(let s)?: return .success(s)
        case nil, .null?: return .failure(Rejection(.missingField, "missing field '\(key)'"))
        default: return .failure(Rejection(.invalidField, "field '\(key)' must be a string"))
        }
    }

    mutating func time(_ key: String) -> Result<(Timestamp, Int32), Rejection> {
        switch string(key) {
        case .failure(let r): return .failure(r)
        case .success(let s):
            guard let t = ISO8601.parse(s) else {
                return .failure(Rejection(.invalidField, "field '\(key)' must be an ISO 8601 timestamp with offset"))
            }
            return .success(t)
        }
    }
}
