import HTTPEndpoint
import Testing

/// The tokens file's format and the comparison.
@Suite struct BearerTokensTests {
    static let a = String(repeating: "0123456789abcdef", count: 2)
    static let b = String(repeating: "fedcba9876543210", count: 4)

    @Test func namesComeInFileOrderAndCommentsAreSkipped() throws {
        let t = try BearerTokens(parsing: "# name:token\n\ncare-team:\(Self.a)\r\n  # another\nward_3.night:\(Self.b)")
        #expect(t.names == ["care-team", "ward_3.night"])
        #expect(t.name(for: Array(Self.a.utf8)) == "care-team")
        #expect(t.name(for: Array(Self.b.utf8)) == "ward_3.night")
    }

    static let nearMisses: [String] = [String(a.dropLast()), a + "0", String(a.dropLast()) + "0", "", String(repeating: "x", count: 600), String(b.prefix(32))]

    @Test(arguments: nearMisses)
    func aNearMissIsNoToken(presented: String) throws {
        let t = try BearerTokens(parsing: "care-team:\(Self.a)\nother:\(Self.b)\n")
        #expect(t.name(for: Array(presented.utf8)) == nil)
    }

    @Test func theHeaderSchemeIsCaseInsensitive() throws {
        let t = try BearerTokens(parsing: "care-team:\(Self.a)\n")
        #expect(t.name(forAuthorization: "BEARER \(Self.a)") == "care-team")
        #expect(t.name(forAuthorization: "Bearer\(Self.a)") == nil)
        #expect(t.name(forAuthorization: nil) == nil)
    }

    static let teamsProblem = "the teams of 'x' must be 1-100 team ids of 1-64 characters of A-Z a-z 0-9 . _ -, comma-separated"

    @Test func aTokenMayBeLimitedToCareTeams() throws {
        let t = try BearerTokens(parsing: "dashboard:\(Self.a)\nward-a-staff:\(Self.b)  teams=ward-a,ward-c \n")
        #expect(t.name(for: Array(Self.b.utf8)) == "ward-a-staff")
        #expect(t.teams(of: "ward-a-staff") == ["ward-a", "ward-c"])
        #expect(t.teams(of: "dashboard") == nil)
    }

    /// A token reads only, unless its line grants writing timeline entries (`write=events`).
    @Test func aTokenWritesOnlyWhatItsLineGrants() throws {
        let t = try BearerTokens(parsing: "dashboard:\(Self.a)\nnurse.kim:\(Self.b) write=events teams=ward-a\n")
        #expect(t.writes(of: "dashboard").isEmpty && t.writes(of: "nurse.kim") == ["events"])
        #expect(t.teams(of: "nurse.kim") == ["ward-a"])
        var r = HTTPRouter(tokens: t)
        r.post("/api/v1/users/{u}/events", access: .write("events")) { _ in .apiSuccess(data: "{}") }
        for (token, status) in [(Self.a, UInt32(403)), (Self.b, 200)] {
            var req = HTTPRequest(method: "POST", path: "/api/v1/users/u/events", authorization: "Bearer \(token)")
            req.contentType = "application/json"
            let (response, record) = r.respond(to: req)
            #expect(response.status == status, "\(response.body)")
            #expect(record.principal == (token == Self.a ? "dashboard" : "nurse.kim"))
            if status == 403 { #expect(response.body.contains("needs write=events")) }
        }
    }

    static let badFiles: [(String, String)] = [
        ("", "no tokens (expected NAME:TOKEN lines)"),
        ("# only a comment\n", "no tokens (expected NAME:TOKEN lines)"),
        ("care-team \(Self.a)\n", "line 1: expected NAME:TOKEN"),
        ("ok:\(Self.a)\ncare team:\(Self.b)\n", "line 2: a token's name must be 1-64 characters of A-Z a-z 0-9 . _ -"),
        (":\(Self.a)\n", "line 1: a token's name must be 1-64 characters of A-Z a-z 0-9 . _ -"),
        ("care-team:short\n", "line 1: the token of 'care-team' must be 32-512 characters (e.g. 'openssl rand -hex 32')"),
        ("care-team:\(Self.a)\u{01}\n", "line 1: the token of 'care-team' must be printable ASCII without spaces"),
        ("x:\(Self.a) ward-a\n", "line 1: after the token of 'x' only 'teams=TEAM[,TEAM...]' and 'write=events' may follow, once each"),
        ("x:\(Self.a) teams=ward-a teams=ward-b\n", "line 1: after the token of 'x' only 'teams=TEAM[,TEAM...]' and 'write=events' may follow, once each"),
        ("x:\(Self.a) write=alerts\n", "line 1: 'write=' of 'x' names what the token may write: events"),
        ("x:\(Self.a) write=\n", "line 1: 'write=' of 'x' names what the token may write: events"),
        ("x:\(Self.a) teams=\n", "line 1: \(teamsProblem)"),
        ("x:\(Self.a) teams=ward-a,,ward-b\n", "line 1: \(teamsProblem)"),
        ("x:\(Self.a) teams=ward,a\u{7f}\n", "line 1: \(teamsProblem)"),
        ("x:\(Self.a) teams=\(Array(repeating: "w", count: 101).joined(separator: ","))\n", "line 1: \(teamsProblem)"),
        ("x:\(Self.a)\nx:\(Self.b)\n", "line 2: the name 'x' is given twice"),
        ("x:\(Self.a)\ny:\(Self.a)\n", "line 2: the token of 'y' is also another name's token")
    ]

    @Test(arguments: badFiles)
    func aBadFileIsRefusedWithItsLine(text: String, message: String) {
        #expect(throws: BearerTokens.Problem.self) { try BearerTokens(parsing: text) }
        do { _ = try BearerTokens(parsing: text) } catch {
            #expect(error.description == message)
            #expect(!error.description.contains(Self.a) && !error.description.contains("short"))
        }
    }
}
