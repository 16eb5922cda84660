/// The bearer tokens an ``HTTPRouter`` accepts, each with a name that the access log shows in its
/// place. Read from a file of `name:token` lines (`#` comments and blank lines ignored).
///
/// A token is compared with every known token in time that depends only on the presented
/// token's length, so response timing tells a client nothing about how close its guess was.
package struct BearerTokens: Sendable {
    /// Why a tokens file was refused: a line number (from 1) when one line is at fault.
    package struct Problem: Error, Hashable, Sendable, CustomStringConvertible {
        /// The line at fault, if one is.
        package var line: Int?
        /// What is wrong (never quoting a token).
        package var message: String
        /// `line N: message` or the message.
        package var description: String { line.map { "line \($0): \(message)" } ?? message }
    }

    /// The shortest token accepted (characters): 32 hex digits are 128 bits.
    package static let minimumTokenLength = 32
    /// The longest token accepted (characters), and the longest a request may present.
    package static let maximumTokenLength = 512
    /// At most this many tokens in one file.
    package static let maximumTokens = 1000

    private let entries: [(name: String, token: [UInt8])]
    private let scopes: [String: [String]]
    private let grants: [String: Set<String>]

    /// The most teams one token may be limited to.
    package static let maximumTeams = 100

    /// The tokens' names, in file order.
    package var names: [String] { entries.map(\.name) }

    /// The care teams a token is limited to (`teams=` on its line), nil for a token without a limit.
    package func teams(of name: String) -> [String]? { scopes[name] }

    /// What a token may write besides reading (`write=events` on its line); a token reads only
    /// unless its line says so.
    package func writes(of name: String) -> Set<String> { grants[name] ?? [] }

    /// What a tokens file may grant with `write=`: `events` (patients' timeline entries).
    package static let writable: Set<String> = ["events"]

    /// Parses `name:token` lines, each optionally followed by ` teams=T1,T2…` (the token then
    /// reads only the users of those care teams) and ` write=events` (it may also record, correct
    /// and retract those users' timeline entries). Names are 1–64 characters of
    /// `A-Z a-z 0-9 . _ -` (they are logged), and so are team ids; tokens are printable ASCII
    /// without spaces, at least ``minimumTokenLength`` long (e.g. `openssl rand -hex 32`); names
    /// and tokens are unique; at least one token.
    package init(parsing text: String) throws(Problem) {
        var entries: [(name: String, token: [UInt8])] = []
        var scopes: [String: [String]] = [:], grants: [String: Set<String>] = [:]
        for (n, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let colon = line.firstIndex(of: ":") else { throw Problem(line: n + 1, message: "expected NAME:TOKEN") }
            let name = String(line[..<colon])
            let rest = line[line.index(after: colon)...]
            let tokenEnd = rest.firstIndex { $0 == " " || $0 == "\t" } ?? rest.endIndex
            let token = Array(rest[..<tokenEnd].utf8)
            guard (1...64).contains(name.utf8.count), name.utf8.allSatisfy(BearerTokens.isNameByte) else {
                throw Problem(line: n + 1, message: "a token's name must be 1-64 characters of A-Z a-z 0-9 . _ -")
            }
            guard token.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
                throw Problem(line: n + 1, message: "the token of '\(name)' must be printable ASCII without spaces")
            }
            for option in rest[tokenEnd...].split(whereSeparator: { $0 == " " || $0 == "\t" }) {
                if option.hasPrefix("teams="), scopes[name] == nil {
                    let teams = option.dropFirst("teams=".count).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                    guard teams.count <= BearerTokens.maximumTeams,
                        teams.allSatisfy({ (1...64).contains($0.utf8.count) && $0.utf8.allSatisfy(BearerTokens.isNameByte) })
                    else {
                        throw Problem(
                            line: n + 1,
                            message:
                                "the teams of '\(name)' must be 1-\(BearerTokens.maximumTeams) team ids of 1-64 characters of A-Z a-z 0-9 . _ -, comma-separated"
                        )
                    }
                    scopes[name] = teams
                } else if option.hasPrefix("write="), grants[name] == nil {
                    let what = option.dropFirst("write=".count).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                    guard !what.isEmpty, what.allSatisfy(BearerTokens.writable.contains) else {
                        throw Problem(
                            line: n + 1,
                            message: "'write=' of '\(name)' names what the token may write: \(BearerTokens.writable.sorted().joined(separator: ", "))")
                    }
                    grants[name] = Set(what)
                } else {
                    throw Problem(line: n + 1, message: "after the token of '\(name)' only 'teams=TEAM[,TEAM...]' and 'write=events' may follow, once each")
                }
            }
            guard token.count >= BearerTokens.minimumTokenLength, token.count <= BearerTokens.maximumTokenLength else {
                throw Problem(
                    line: n + 1,
                    message:
                        "the token of '\(name)' must be \(BearerTokens.minimumTokenLength)-\(BearerTokens.maximumTokenLength) characters (e.g. 'openssl rand -hex 32')"
                )
            }
            if entries.contains(where: { $0.name == name }) { throw Problem(line: n + 1, message: "the name '\(name)' is given twice") }
            if entries.contains(where: { $0.token == token }) { throw Problem(line: n + 1, message: "the token of '\(name)' is also another name's token") }
            entries.append((name, token))
            if entries.count > BearerTokens.maximumTokens { throw Problem(line: n + 1, message: "more than \(BearerTokens.maximumTokens) tokens") }
        }
        guard !entries.isEmpty else { throw Problem(line: nil, message: "no tokens (expected NAME:TOKEN lines)") }
        self.entries = entries
        self.scopes = scopes
        self.grants = grants
    }

    /// The name of the token equal to `presented`, or nil. Every known token is compared, each
    /// over all of `presented`'s bytes.
    package func name(for presented: some Collection<UInt8>) -> String? {
        guard !presented.isEmpty, presented.count <= BearerTokens.maximumTokenLength else { return nil }
        let p = Array(presented)
        var found = -1
        for (i, e) in entries.enumerated() {
            var diff: UInt8 = p.count == e.token.count ? 0 : 1
            let t = e.token
            for j in 0..<p.count { diff |= p[j] ^ t[j % t.count] }
            // Branch-free select: found = i when diff == 0.
            let hit = Int(diff == 0 ? 1 : 0)
            found = hit * i + (1 - hit) * found
        }
        return found >= 0 ? entries[found].name : nil
    }

    /// The name of the token an `Authorization: Bearer TOKEN` header carries, or nil.
    package func name(forAuthorization header: String?) -> String? {
        guard let token = BearerTokens.bearerToken(header) else { return nil }
        return name(for: token)
    }

    /// The token of an `Authorization: Bearer TOKEN` header (scheme case-insensitive), or nil.
    static func bearerToken(_ header: String?) -> Substring.UTF8View? {
        guard let header else { return nil }
        let h = header.drop { $0 == " " }
        guard h.count > 7, h.prefix(7).lowercased() == "bearer " else { return nil }
        let token = h.dropFirst(7).drop { $0 == " " }
        var end = token.endIndex
        while end > token.startIndex, token[token.index(before: end)] == " " { end = token.index(before: end) }
        let t = token[..<end]
        return t.isEmpty ? nil : Substring(t).utf8
    }

    private static func isNameByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b == 0x2e || b == 0x5f || b == 0x2d
    }
}
