import MobilityModel

/// The care-team console's pages: HTML without any script, styled by ``styleSheet`` (served by
/// the listener as `/console/style.css`, so that the pages' Content-Security-Policy allows no
/// inline style), every form posting to the console with the session's CSRF token in a hidden
/// field. Every string from a person or a device is escaped (``Markup``).
package enum ConsolePage {
    /// Where the style sheet is served.
    package static let styleSheetPath = "/console/style.css"

    /// The Content-Security-Policy of every console page: nothing runs, styles and images come
    /// from the listener only (charts are inline SVG), forms post only to it, never framed.
    package static let contentSecurityPolicy =
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    /// The style sheet: the reports' (phone first), and the console's lists, forms and notices.
    package static let styleSheet: String =
        ReportPage.style.description + """
            header.top{display:flex;flex-wrap:wrap;align-items:center;gap:6px 14px;border-bottom:1px solid #d0d0d0;padding-bottom:6px;margin-bottom:8px}
            header.top .who{margin-left:auto;color:#444;font-size:.9em}
            header.top form{display:inline;margin:0}
            nav.filters{display:flex;flex-wrap:wrap;gap:4px 12px;font-size:.9em;margin:.3em 0 .6em}
            nav.filters a.on{font-weight:bold;text-decoration:none;color:#1a1a1a}
            .notice{border-left:4px solid #1565c0;background:#e8f0fb;padding:6px 10px;margin:.5em 0}
            .refused{border-left:4px solid #b71c1c;background:#fbeaea;padding:6px 10px;margin:.5em 0}
            .sev-critical{color:#b71c1c;font-weight:bold}
            .sev-warning{color:#8a4b00;font-weight:bold}
            .sev-info{color:#1565c0}
            .stale{color:#b71c1c;font-weight:bold}
            .quiet{color:#555}
            svg.spark{width:90px;height:24px;display:block;margin-top:2px}
            nav.sort{display:none}
            form.action{border:1px solid #d0d0d0;border-radius:4px;padding:6px 10px;margin:.5em 0}
            form.action label{display:block;margin:.25em 0}
            form.action input[type=text],form.action select,form.action input[type=date]{font:inherit;max-width:100%}
            form.signin{max-width:320px}
            form.signin label{display:block;margin:.6em 0 .2em}
            form.signin input{font:inherit;width:100%;box-sizing:border-box;padding:6px}
            button{font:inherit;padding:4px 12px;margin-top:.3em}
            table.patients td,table.patients th{white-space:nowrap}
            table.patients td.attention{white-space:normal;min-width:12em}
            @media (max-width:480px){header.top .who{margin-left:0}nav.sort{display:flex}
            table.patients thead,table.history thead{display:none}
            table.patients,table.patients tbody,table.history,table.history tbody{display:block}
            table.patients tr,table.history tr{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);border-bottom:1px solid #d0d0d0;padding:4px 0}
            table.patients td,table.history td{border:0;overflow-wrap:normal;white-space:normal}
            table.patients td:first-child,table.patients td.attention,table.patients td.speed,table.history td:first-child{grid-column:1/-1}
            table.patients td:first-child{font-weight:bold;padding-top:6px}}

            """

    /// The page around `body`: the header with the person's name and the sign-out form (when
    /// signed in: `who` and `csrf`).
    static func shell(title: String, who: String?, csrf: String?, body: (inout Markup) -> Void) -> String {
        var m = Markup(capacity: 32 * 1024)
        m.trusted("<!DOCTYPE html>\n")
        m.open("html", [("xmlns", "http://www.w3.org/1999/xhtml"), ("lang", "en")])
        m.open("head")
        m.element("meta", [("charset", "utf-8")])
        m.element("meta", [("name", "viewport"), ("content", "width=device-width, initial-scale=1")])
        m.element("title", text: title)
        m.element("link", [("rel", "stylesheet"), ("href", styleSheetPath)])
        m.close("head")
        m.open("body")
        m.open("header", [("class", "top")])
        m.element("a", [("href", "/console")], text: "MobilityWatch")
        if let who, let csrf {
            m.element("span", [("class", "who")], text: "Signed in as \(who)")
            m.open("form", [("method", "post"), ("action", "/console/sign-out")])
            csrfField(csrf, into: &m)
            m.element("button", [("type", "submit")], text: "Sign out")
            m.close("form")
        }
        m.close("header")
        body(&m)
        m.close("body")
        m.close("html")
        m.trusted("\n")
        return m.text
    }

    /// The hidden field that carries the session's CSRF token in every form.
    static func csrfField(_ csrf: String, into m: inout Markup) {
        m.element("input", [("type", "hidden"), ("name", "csrf"), ("value", csrf)])
    }

    /// The sign-in page, with `message` (a refusal) above the form when given, and `next` (the
    /// console page to go to once signed in, already checked) in a hidden field when given.
    package static func signIn(message: String?, login: String = "", next: String? = nil) -> String {
        shell(title: "Sign in - MobilityWatch", who: nil, csrf: nil) { m in
            m.element("h1", text: "Sign in")
            if let message { m.element("p", [("class", "refused")], text: message) }
            m.open("form", [("class", "signin"), ("method", "post"), ("action", "/console/sign-in")])
            m.element("label", [("for", "login")], text: "Login")
            m.element(
                "input",
                [("id", "login"), ("name", "login"), ("type", "text"), ("autocomplete", "username"), ("required", "required"), ("value", login)])
            m.element("label", [("for", "password")], text: "Password")
            m.element("input", [("id", "password"), ("name", "password"), ("type", "password"), ("autocomplete", "current-password"), ("required", "required")])
            if let next { m.element("input", [("type", "hidden"), ("name", "next"), ("value", next)]) }
            m.element("button", [("type", "submit")], text: "Sign in")
            m.close("form")
            m.element("p", [("class", "note")], text: "Your login and password are the ones you use for mobilityctl (the broker's).")
        }
    }

    /// A short page that says what happened (a refusal or a missing patient), with a way back.
    package static func message(title: String, text: String, who: String?, csrf: String?, back: String = "/console") -> String {
        shell(title: title + " - MobilityWatch", who: who, csrf: csrf) { m in
            m.element("h1", text: title)
            m.element("p", [("class", "refused")], text: text)
            m.open("p")
            m.element("a", [("href", back)], text: "Back")
            m.close("p")
        }
    }
}
