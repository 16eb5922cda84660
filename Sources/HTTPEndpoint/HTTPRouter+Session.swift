extension HTTPRouter {
    /// The form field that carries a console session's CSRF token.
    package static let csrfField = "csrf"
    /// Where a request without a live session is sent to sign in.
    package static let signInPath = "/console/sign-in"

    /// The sign-in form's field (and the sign-in page's query parameter) that carries the console
    /// page to go to once signed in.
    package static let returnField = "next"
    /// The longest page address a sign-in returns to (bytes).
    package static let maximumReturnPathBytes = 1024

    /// Finds the console session of a `.session` route's request (sets its principal, teams and
    /// session); nil when there is one, else the refusal: a `GET` is sent to sign in (303) with
    /// the page asked for (``signInLocation(returningTo:)``), a `POST` is answered
    /// ``sessionEnded`` (401), so that a form posted after the session ended changes nothing.
    func signedIn(_ request: inout HTTPRequest) -> HTTPResponse? {
        guard let sessions, let (id, s) = sessions.session(cookieHeader: request.cookie) else {
            if request.method == "GET" || request.method == "HEAD" {
                return HTTPResponse.text("sign in first\n", status: 303).adding("Location", HTTPRouter.signInLocation(returningTo: request))
            }
            return sessionEnded
        }
        request.principal = s.login
        request.teams = s.teams
        request.session = (id, s.csrf)
        return nil
    }

    /// Reads a posted form into the request; nil when it is one (with the session's CSRF token,
    /// on a `.session` route), else the refusal. A form a browser posts from an origin that is not
    /// one of ``consoleOrigins`` is refused first, the sign-in form too. The `Host` header plays no
    /// part: behind a TLS-terminating proxy it is not the listener's, and a DNS-rebinding page
    /// makes `Origin` and `Host` agree.
    func formRead(_ request: inout HTTPRequest, type: String?, route: Route) -> HTTPResponse? {
        if let origin = request.origin, !consoleOrigins.contains(origin) {
            return refusal(request, .forbidden, "the form was sent from another site; nothing was changed")
        }
        guard type == "application/x-www-form-urlencoded" else {
            return refusal(request, .unsupportedMediaType, "send the form as application/x-www-form-urlencoded")
        }
        do { request.form = try HTMLForm(parsing: request.body) } catch { return refusal(request, .badData, error.message) }
        if case .session = route.access {
            guard let expected = request.session?.csrf, let sent = request.form.value(HTTPRouter.csrfField),
                ConsoleSessions.sameToken(sent, expected)
            else {
                return refusal(
                    request, .forbidden, "the form's CSRF token is missing or not this session's: reload the page and send it again; nothing was changed")
            }
        }
        return nil
    }

    /// Where a request without a session is sent: the sign-in page with the page asked for as its
    /// `next` parameter, when it is one a sign-in may return to (``consoleReturnPath(_:)``) and not
    /// the list (the default).
    package static func signInLocation(returningTo request: HTTPRequest) -> String {
        var asked = percentEncoded(request.path, keeping: "/")
        if !request.query.isEmpty {
            asked += "?" + request.query.map { percentEncoded($0.name) + "=" + percentEncoded($0.value) }.joined(separator: "&")
        }
        guard let next = consoleReturnPath(asked), next != "/console" else { return signInPath }
        return signInPath + "?" + returnField + "=" + percentEncoded(next, keeping: "/")
    }

    /// `candidate` when a sign-in may send the browser there, else nil: a path of this origin
    /// under `/console` (`/console`, `/console/…`, `/console?…`), at most
    /// ``maximumReturnPathBytes`` of printable ASCII, without `//`, a backslash, a `.` or `..`
    /// segment (percent-encoded or not), and not the sign-in page. So a link that carries `next` cannot send a person who
    /// signs in to another site (`//host`, `https://host`, `/\host`, which browsers read as
    /// `//host`) nor out of the console.
    package static func consoleReturnPath(_ candidate: String?) -> String? {
        guard let candidate, candidate.utf8.count <= maximumReturnPathBytes, candidate.utf8.allSatisfy({ (0x21...0x7E).contains($0) }),
            !candidate.contains("\\"), !candidate.contains("//")
        else { return nil }
        let path = candidate.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard path == "/console" || path.hasPrefix("/console/"), path != signInPath else { return nil }
        // A browser resolves `%2e` as `.` in a path's dot segments, so each segment is judged decoded.
        guard
            !path.split(separator: "/").contains(where: { segment in
                guard let decoded = String(segment).removingPercentEncoding else { return true }
                return decoded == "." || decoded == ".."
            })
        else { return nil }
        return candidate
    }

    /// `text` with every byte but `A-Z a-z 0-9 - . _ ~` and those of `keeping` as `%XX`.
    static func percentEncoded(_ text: String, keeping: String = "") -> String {
        let kept = Set(keeping.utf8), hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(b)
            case _ where kept.contains(b): out.append(b)
            default: out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
