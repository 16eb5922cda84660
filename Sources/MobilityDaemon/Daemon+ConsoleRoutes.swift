import CareReports
import HTTPEndpoint
import MobilityModel

extension Daemon {
    /// The care-team console (`--console-staff`), on the report listener:
    ///
    /// - `GET /console/sign-in[?next=PATH]`, `POST /console/sign-in` (form: `login`, `password`,
    ///   `next`): a person of the staff file signs in, and is sent to `next` when it is a console
    ///   page (``HTTPRouter/consoleReturnPath(_:)``: never another site), else to the list; a session cookie comes back (``ConsoleSessions``). A wrong login or
    ///   password is one refusal (401), a locked login another (429); each is logged with the login
    ///   (a login not in the staff file as `(unknown)`), never the password. Failed sign-ins of
    ///   made-up logins never keep the staff's from being checked. Signing in ends the browser's
    ///   previous session, if any.
    /// - `POST /console/sign-out`: ends the session.
    /// - `GET /console`: the patient list of the person's teams (`Daemon+ConsoleList.swift`).
    /// - `GET /console/style.css`: the pages' style sheet (their policy allows no inline style).
    ///
    /// Every other console route needs a live session (else: sign in) and every form it posts the
    /// session's CSRF token (``HTTPRouter/postForm(_:access:_:)``).
    func mountConsole(_ router: inout HTTPRouter, sessions: ConsoleSessions, desks: ConsoleDesks) {
        let log = log, clock = clock, staff = config.consoleStaff, idleMinutes = sessions.policy.idleMilliseconds / 60_000
        // A login is logged only when it is one: someone who typed a password into the login field must not find it in the log.
        let logged: @Sendable (String) -> String = { login in staff?.teams(of: login) != nil ? login : "(unknown)" }
        router.sessionEnded = .console(
            ConsolePage.signIn(
                message:
                    "Your session has ended (signed out, unused for \(idleMinutes) minute\(idleMinutes == 1 ? "" : "s"), or mobilityd restarted), so nothing was changed. Sign in, then send the form again."
            ), status: 401)
        router.pages = (
            "/console",
            { status, message in
                .console(
                    ConsolePage.message(
                        title: status == 404 ? "Not found" : "Refused",
                        text: status == 404 ? "The console has no such page." : message.prefix(1).uppercased() + message.dropFirst() + ".", who: nil,
                        csrf: nil), status: status)
            }
        )
        router.get("/", access: .open) { _ in .text("the console is at /console\n", status: 303).adding("Location", "/console") }
        router.get(ConsolePage.styleSheetPath, access: .open) { _ in
            HTTPResponse(contentType: "text/css; charset=utf-8", body: ConsolePage.styleSheet)
        }
        router.get(HTTPRouter.signInPath, query: [HTTPRouter.returnField], access: .open) { request in
            let next = HTTPRouter.consoleReturnPath(request.query(HTTPRouter.returnField))
            if sessions.session(cookieHeader: request.cookie) != nil { return .text("signed in\n", status: 303).adding("Location", next ?? "/console") }
            return .console(ConsolePage.signIn(message: nil, next: next))
        }
        router.postForm(HTTPRouter.signInPath, access: .open) { request in
            let login = request.form.value("login") ?? "", password = request.form.value("password") ?? ""
            let next = HTTPRouter.consoleReturnPath(request.form.value(HTTPRouter.returnField))
            guard StaffPasswords.isLogin(login) else {
                return .console(ConsolePage.signIn(message: "The login or the password is wrong.", next: next), status: 401)
            }
            switch sessions.signIn(login: login, password: Array(password.utf8), replacing: request.cookie) {
            case .signedIn(let id, _):
                log.info("console sign-in", ["login": login])
                return .text("signed in\n", status: 303).adding("Location", next ?? "/console").adding("Set-Cookie", sessions.setCookie(id: id))
            case .refused(let lockedUntil):
                log.warn("console sign-in refused: wrong login or password", ["login": logged(login)])
                if let lockedUntil {
                    log.warn("console login locked after repeated failures", ["login": logged(login), "until": "\(Timestamp(milliseconds: lockedUntil))"])
                }
                return .console(ConsolePage.signIn(message: "The login or the password is wrong.", login: login, next: next), status: 401)
            case .locked(let until):
                log.warn("console sign-in refused: login locked", ["login": logged(login)])
                let minutes = max(1, (until - clock.wall().milliseconds + 59_999) / 60_000)
                return .console(
                    ConsolePage.signIn(
                        message:
                            "Too many failed sign-ins for this login: it is locked for \(minutes) more minute\(minutes == 1 ? "" : "s"). A colleague can act for your patients meanwhile; only a restart of mobilityd unlocks it sooner.",
                        login: login, next: next), status: 429)
            }
        }
        router.postForm("/console/sign-out") { request in
            if let id = request.session?.id { sessions.signOut(id: id) }
            log.info("console sign-out", ["login": request.principal ?? "-"])
            return .text("signed out\n", status: 303).adding("Location", HTTPRouter.signInPath).adding("Set-Cookie", ConsoleSessions.clearCookie)
        }
        mountConsoleList(&router, desks: desks)
        mountConsolePatient(&router, desks: desks)
        mountConsoleActions(&router, desks: desks)
    }
}

extension HTTPResponse {
    /// A console page, with the console's Content-Security-Policy (no script, no inline style)
    /// and referrer policy: the listener's own pages only, so that the browser's forms carry
    /// their `Origin` (under `no-referrer` they say `null`, which the router refuses).
    static func console(_ page: String, status: UInt32 = 200) -> HTTPResponse {
        HTTPResponse.html(page, status: status).adding("Content-Security-Policy", ConsolePage.contentSecurityPolicy)
            .adding("Referrer-Policy", "same-origin")
    }
}
