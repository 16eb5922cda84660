import Foundation
import Glibc

/// The broker accounts `mobility-sim` and `mobilityctl` log in with, read from a private file.
///
/// One `account password` line per account (the password is the rest of the line, trimmed); blank
/// lines and lines starting with `#` are ignored. A gateway's account is its user id (the shipped
/// broker binds client ids to usernames and lets a gateway publish only its own user's topics), so
/// the file holds one line per simulated user, plus the reader account `verify` reads alerts with.
/// The file must be a regular file of mode 0600 or 0400: it holds passwords, which never go on
/// the command line (every local user can read a process's arguments).
package struct BrokerCredentials: Sendable {
    /// A file that cannot be used, with a message naming the file (and line) and never a password.
    package struct Problem: Error, CustomStringConvertible, Sendable {
        /// The message.
        package let description: String
    }

    /// The file it was read from.
    package let path: String
    private let passwords: [String: String]

    /// Reads and checks `path`.
    package static func load(_ path: String) throws(Problem) -> BrokerCredentials {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Problem(description: "cannot read credentials file \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { throw Problem(description: "credentials file \(path) is not a regular file") }
        let mode = st.st_mode & 0o7777
        guard mode & 0o077 == 0 else {
            throw Problem(
                description: "credentials file \(path) holds passwords but is accessible to group or others "
                    + "(mode 0\(String(mode, radix: 8))); run 'chmod 600 \(path)'")
        }
        guard st.st_size <= 16 << 20, let data = try? FileHandle(fileDescriptor: fd, closeOnDealloc: false).readToEnd() ?? Data(),
            let text = String(data: data, encoding: .utf8)
        else {
            throw Problem(description: "cannot read credentials file \(path): not UTF-8 text of at most 16 MiB")
        }
        return try BrokerCredentials(path: path, text: text)
    }

    /// Parses the text of a credentials file (`path` names it in messages).
    package init(path: String, text: String) throws(Problem) {
        var passwords: [String: String] = [:]
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let gap = line.firstIndex(where: \.isWhitespace) else {
                throw Problem(description: "\(path):\(n + 1): expected 'account password'")
            }
            let account = String(line[..<gap])
            let password = line[gap...].trimmingCharacters(in: .whitespaces)
            guard !password.isEmpty else { throw Problem(description: "\(path):\(n + 1): expected 'account password'") }
            guard passwords.updateValue(password, forKey: account) == nil else {
                throw Problem(description: "\(path):\(n + 1): a second line for account \(account)")
            }
        }
        self.path = path
        self.passwords = passwords
    }

    /// The password of `account`, if the file has a line for it.
    package func password(for account: String) -> String? { passwords[account] }

    /// The accounts of `wanted` that have no line, sorted.
    package func missing(_ wanted: some Sequence<String>) -> [String] { Set(wanted).filter { passwords[$0] == nil }.sorted() }
}
