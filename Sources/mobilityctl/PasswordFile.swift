import Foundation
import Glibc

/// The MQTT password of `--password-file`: one line in a regular file only its owner can read
/// (mode 0600 or 0400), as mobilityd's `--password-file`. Messages name the file, never the password.
enum PasswordFile {
    /// A file that cannot be used.
    struct Problem: Error, CustomStringConvertible {
        /// The message.
        let description: String
    }

    /// The password in `path`, or why it cannot be used.
    static func read(_ path: String) -> Result<String, Problem> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(Problem(description: "cannot read password file \(path): \(String(cString: strerror(errno)))")) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return .failure(Problem(description: "password file \(path) is not a regular file")) }
        let mode = st.st_mode & 0o7777
        guard mode & 0o077 == 0 else {
            return .failure(
                Problem(description: "password file \(path) is accessible to group or others (mode 0\(String(mode, radix: 8))); run 'chmod 600 \(path)'"))
        }
        guard st.st_size <= 1 << 16, let data = try? FileHandle(fileDescriptor: fd, closeOnDealloc: false).readToEnd() ?? Data(),
            let text = String(data: data, encoding: .utf8)
        else {
            return .failure(Problem(description: "cannot read password file \(path): not UTF-8 text of at most 64 KiB"))
        }
        let secret = text.trimmingCharacters(in: .newlines)
        guard !secret.isEmpty else { return .failure(Problem(description: "password file \(path) is empty")) }
        guard !secret.contains(where: \.isNewline) else { return .failure(Problem(description: "password file \(path) must hold one line, the password")) }
        return .success(secret)
    }
}
