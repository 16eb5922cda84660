import MobilityModel

/// The kinds of API error, as the `errorType` of the error envelope (Prometheus's HTTP API
/// vocabulary where it has a word for it).
package enum APIErrorType: String, Sendable {
    /// A malformed request: a bad parameter, an unknown or repeated query parameter (400).
    case badData = "bad_data"
    /// Missing or wrong credentials (401).
    case unauthorized
    /// A valid token that may not do this (403).
    case forbidden
    /// No such resource (404).
    case notFound = "not_found"
    /// The path exists but not for this method (405).
    case methodNotAllowed = "method_not_allowed"
    /// What the request names is in a state that refuses it, e.g. an id taken already (409).
    case conflict
    /// A request body over the listener's bound (413).
    case payloadTooLarge = "payload_too_large"
    /// The request line or query is over the listener's bounds (414).
    case tooLong = "too_long"
    /// A request body that is not JSON (415).
    case unsupportedMediaType = "unsupported_media_type"
    /// The server failed (500).
    case `internal`
    /// The server cannot answer now (503).
    case unavailable

    /// The HTTP status this kind of error is sent with.
    package var status: UInt32 {
        switch self {
        case .badData: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .notFound: 404
        case .methodNotAllowed: 405
        case .conflict: 409
        case .payloadTooLarge: 413
        case .tooLong: 414
        case .unsupportedMediaType: 415
        case .internal: 500
        case .unavailable: 503
        }
    }
}

extension HTTPResponse {
    /// The JSON API's content type.
    package static let jsonContentType = "application/json; charset=utf-8"

    /// `{"status":"success","data":DATA}` with `data` a JSON text the caller wrote (e.g. with
    /// `JSONWriter`); 200 unless told.
    package static func apiSuccess(data: String, status: UInt32 = 200) -> HTTPResponse {
        HTTPResponse(status: status, contentType: jsonContentType, body: "{\"status\":\"success\",\"data\":" + data + "}")
    }

    /// `{"status":"error","errorType":TYPE,"error":MESSAGE}` with the type's status, and
    /// `"reason":REASON` when given (a refused command's stable code). The message is for people;
    /// it must not quote health data.
    package static func apiError(_ type: APIErrorType, _ message: String, reason: String? = nil) -> HTTPResponse {
        var body = "{\"status\":\"error\",\"errorType\":"
        JSONWriter.quote(type.rawValue, into: &body)
        body += ",\"error\":"
        JSONWriter.quote(message, into: &body)
        if let reason {
            body += ",\"reason\":"
            JSONWriter.quote(reason, into: &body)
        }
        body += "}"
        return HTTPResponse(status: type.status, contentType: jsonContentType, body: body)
    }
}
