/// A response from an ``HTTPServer`` handler or an ``HTTPRouter`` route: a status, headers and a
/// body of bytes.
package struct HTTPResponse: Sendable {
    /// The status code.
    package var status: UInt32
    /// The `Content-Type` header.
    package var contentType: String
    /// Further headers, sent in this order after `Content-Type`.
    package var headers: [(name: String, value: String)]
    /// The body.
    package var bytes: [UInt8]

    /// Creates a response with a text body.
    package init(status: UInt32 = 200, contentType: String = "text/plain; charset=utf-8", body: String) {
        self.init(status: status, contentType: contentType, bytes: Array(body.utf8))
    }

    /// Creates a response with a body of bytes and extra headers.
    package init(status: UInt32 = 200, contentType: String, headers: [(name: String, value: String)] = [], bytes: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.bytes = bytes
    }

    /// The body as text (UTF-8).
    package var body: String { String(decoding: bytes, as: UTF8.self) }

    /// The value of the first header called `name` (case-insensitive), `Content-Type` included.
    package func header(_ name: String) -> String? {
        let n = name.lowercased()
        if n == "content-type" { return contentType }
        return headers.first { $0.name.lowercased() == n }?.value
    }

    /// An HTML page (`text/html; charset=utf-8`).
    package static func html(_ page: String, status: UInt32 = 200) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/html; charset=utf-8", body: page)
    }

    /// A plain-text body (`text/plain; charset=utf-8`).
    package static func text(_ text: String, status: UInt32 = 200) -> HTTPResponse {
        HTTPResponse(status: status, body: text)
    }

    /// Adds a header (after the ones already there).
    package func adding(_ name: String, _ value: String) -> HTTPResponse {
        var r = self
        r.headers.append((name, value))
        return r
    }

    /// The headers every response of a listener serving health data carries (``HTTPRouter``
    /// adds them): never cached or stored by a browser or proxy, never sniffed into another type,
    /// no referrer sent on, nothing loaded or run but inline styles and `data:` images (pages
    /// with inline SVG and no JavaScript), never framed.
    package static let securityHeaders: [(name: String, value: String)] = [
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
        ("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'"),
        ("Referrer-Policy", "no-referrer")
    ]
}
