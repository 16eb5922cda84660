import CCrypto

/// The care staff who may sign in to the console, read from a file of
/// `LOGIN:HASH teams=TEAM[,TEAM...]` lines (`#` comments and blank lines ignored), where `HASH`
/// is mosquitto_passwd's `$7$ITERATIONS$SALT$HASH` (PBKDF2-HMAC-SHA512, salt and hash in base64):
/// the operator makes a person's line with `mosquitto_passwd` and adds their teams, so the console
/// knows the same logins as the broker.
///
/// A password is checked with the same work whether or not the login exists (an unknown login is
/// checked against a hash of no one), and the derived key is compared in constant time.
package struct StaffPasswords: Sendable {
    /// Why a staff file was refused: a line number (from 1) when one line is at fault.
    package struct Problem: Error, Hashable, Sendable, CustomStringConvertible {
        /// The line at fault, if one is.
        package var line: Int?
        /// What is wrong (never quoting a hash).
        package var message: String
        /// `line N: message` or the message.
        package var description: String { line.map { "line \($0): \(message)" } ?? message }
    }

    /// One person: their login, the PBKDF2 parameters and key, their teams.
    struct Entry: Sendable {
        var login: String
        var iterations: Int32
        var salt: [UInt8]
        var key: [UInt8]
        var teams: [String]
    }

    private let entries: [String: Entry]
    /// What an unknown login is checked against (no password matches it), so it costs the same.
    private let nobody: Entry

    /// The most people in one file.
    package static let maximumEntries = 10_000
    /// The most PBKDF2 iterations accepted (a file cannot make a sign-in take seconds).
    package static let maximumIterations: Int32 = 1_000_000
    /// The longest password checked (bytes); a longer one is refused without deriving anything.
    package static let maximumPasswordBytes = 1024

    /// The logins, sorted.
    package var logins: [String] { entries.keys.sorted() }

    /// The teams of a login (nil: no such login).
    package func teams(of login: String) -> [String]? { entries[login]?.teams }

    /// Parses the file's text. Logins are 1-64 characters of `A-Z a-z 0-9 . _ - @` (the broker's
    /// command-topic logins), team ids 1-64 of `A-Z a-z 0-9 _ -`, every line has `teams=`.
    package init(parsing text: String) throws(Problem) {
        var entries: [String: Entry] = [:]
        for (n, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.drop { $0 == " " || $0 == "\t" }
            if line.isEmpty || line.hasPrefix("#") { continue }
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let colon = words[0].firstIndex(of: ":") else { throw Problem(line: n + 1, message: "expected LOGIN:HASH teams=TEAM[,TEAM...]") }
            let login = String(words[0][..<colon])
            guard StaffPasswords.isLogin(login) else { throw Problem(line: n + 1, message: "a login is 1-64 characters of A-Z a-z 0-9 . _ - @") }
            guard let (iterations, salt, key) = StaffPasswords.parseHash(words[0][words[0].index(after: colon)...]) else {
                throw Problem(
                    line: n + 1,
                    message: "the hash of '\(login)' must be mosquitto_passwd's $7$ITERATIONS$SALT$HASH (PBKDF2-SHA512, 1-\(Self.maximumIterations) iterations)"
                )
            }
            guard words.count == 2, words[1].hasPrefix("teams=") else {
                throw Problem(line: n + 1, message: "after the hash of '\(login)' comes 'teams=TEAM[,TEAM...]' (the teams whose patients the person sees)")
            }
            let teams = words[1].dropFirst("teams=".count).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard (1...100).contains(teams.count), teams.allSatisfy(StaffPasswords.isTeam) else {
                throw Problem(line: n + 1, message: "the teams of '\(login)' are 1-100 team ids of 1-64 characters of A-Z a-z 0-9 _ -, comma-separated")
            }
            guard entries[login] == nil else { throw Problem(line: n + 1, message: "the login '\(login)' is given twice") }
            entries[login] = Entry(login: login, iterations: iterations, salt: salt, key: key, teams: teams)
            guard entries.count <= Self.maximumEntries else { throw Problem(line: n + 1, message: "more than \(Self.maximumEntries) logins") }
        }
        guard !entries.isEmpty else { throw Problem(line: nil, message: "no logins (expected LOGIN:HASH teams=TEAM lines)") }
        self.entries = entries
        let iterations = entries.values.map(\.iterations).max() ?? 101
        nobody = Entry(login: "", iterations: iterations, salt: Array(repeating: 0, count: 12), key: Array(repeating: 0, count: 64), teams: [])
    }

    /// The teams of `login` when `password` is its password, else nil (an unknown login, a wrong
    /// or over-long password): the same work either way.
    package func verify(login: String, password: some Collection<UInt8>) -> [String]? {
        let entry = entries[login]
        let e = entry ?? nobody
        guard password.count <= Self.maximumPasswordBytes else { return nil }
        let p = Array(password)
        var derived = [UInt8](repeating: 0, count: e.key.count)
        let ok = p.withUnsafeBytes { pw in
            mw_pbkdf2_sha512(pw.baseAddress, Int32(pw.count), e.salt, Int32(e.salt.count), e.iterations, &derived, Int32(derived.count))
        }
        guard ok == 1 else { return nil }
        let same = CRYPTO_memcmp(derived, e.key, derived.count) == 0
        return same && entry != nil ? e.teams : nil
    }

    /// A `$7$ITERATIONS$SALT$HASH` line's parts, nil when it is not one.
    static func parseHash(_ text: Substring) -> (Int32, [UInt8], [UInt8])? {
        let parts = text.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "7", let iterations = Int32(parts[2]),
            (1...maximumIterations).contains(iterations), let salt = Base64.decode(parts[3]), let key = Base64.decode(parts[4]),
            (8...64).contains(salt.count), key.count == 64
        else { return nil }
        return (iterations, salt, key)
    }

    /// Whether `s` is a login: 1-64 of `A-Z a-z 0-9 . _ - @`.
    package static func isLogin(_ s: some StringProtocol) -> Bool {
        (1...64).contains(s.utf8.count) && s.utf8.allSatisfy { isAlphanumeric($0) || $0 == 0x2e || $0 == 0x5f || $0 == 0x2d || $0 == 0x40 }
    }

    /// Whether `s` is a team id: 1-64 of `A-Z a-z 0-9 _ -`.
    static func isTeam(_ s: String) -> Bool {
        (1...64).contains(s.utf8.count) && s.utf8.allSatisfy { isAlphanumeric($0) || $0 == 0x5f || $0 == 0x2d }
    }

    private static func isAlphanumeric(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)
    }
}

/// Standard base64 (RFC 4648, with padding), as mosquitto_passwd writes it.
enum Base64 {
    /// The bytes of `text`, nil when it is not base64.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer: UInt32 = 0, bits = 0, padding = 0
        for c in text.utf8 {
            let v: UInt32
            switch c {
            case 0x41...0x5a: v = UInt32(c - 0x41)
            case 0x61...0x7a: v = UInt32(c - 0x61 + 26)
            case 0x30...0x39: v = UInt32(c - 0x30 + 52)
            case 0x2b: v = 62
            case 0x2f: v = 63
            case 0x3d:
                padding += 1
                continue
            default: return nil
            }
            guard padding == 0 else { return nil }
            buffer = buffer << 6 | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        guard (text.utf8.count % 4) == 0, padding <= 2, !out.isEmpty else { return nil }
        return out
    }
}
