import CSimdJSON
import MobilityModel

extension mw_json_field {
    /// The string's UTF-8 bytes (empty unless a string).
    var bytes: UnsafeBufferPointer<UInt8> {
        guard type == UInt8(MW_STRING.rawValue), let str else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: UnsafeRawPointer(str).assumingMemoryBound(to: UInt8.self), count: Int(len))
    }

    /// The string as a Swift string (empty unless a string).
    var text: String { String(decoding: bytes, as: UTF8.self) }

    var isString: Bool { type == UInt8(MW_STRING.rawValue) }

    /// The rejection for a required string field that is absent, null or of another type.
    func typeError(_ key: String) -> Rejection {
        type == UInt8(MW_ABSENT.rawValue) || type == UInt8(MW_NULL.rawValue)
            ? Rejection(.missingField, "missing field '\(key)'") : Rejection(.invalidField, "field '\(key)' must be a string")
    }

    /// A required string field.
    func string(_ key: String) -> Result<String, Rejection> { isString ? .success(text) : .failure(typeError(key)) }

    /// A required ISO 8601 timestamp field, its date part read through the payload's `dates`.
    func time(_ key: String, dates: inout ISO8601.DateCache) -> Result<(Timestamp, offsetSeconds: Int32), Rejection> {
        guard isString else { return .failure(typeError(key)) }
        guard let t = ISO8601.parse(utf8: bytes, dates: &dates) else {
            return .failure(Rejection(.invalidField, "field '\(key)' must be an ISO 8601 timestamp with offset"))
        }
        return .success(t)
    }
}
