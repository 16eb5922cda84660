extension HTTPRouter {
    /// The form field that carries a console session's CSRF token.
    package static let csrfField = "csrf"
    /// Where a request without a live session is sent to sign in.
    package static let signInPath = "/console/sign-in"

    /// Finds the console session of a `.session` route's request (sets its principal, teams and
    /// session); nil when there is one, else the refusal: a `GET` is sent to sign in (303), a
    /// `POST` is answered ``sessionEnded`` (401), so that a form posted after the session ended
    /// changes nothing.
    func signedIn(_ request: inout HTTPRequest) -> HTTPResponse? {
        guard let sessions, let (id, s) = sessions.session(cookieHeader: request.cookie) else {
            if request.method == "GET" || request.method == "HEAD" {
                return HTTPResponse.text("sign in first\n", status: 303).adding("Location", HTTPRouter.signInPath)
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
}
