import Foundation
import Glibc

/// Directories and files that hold health data: readable and writable by the daemon's user only
/// (directories 0700, files 0600), whatever the umask. Modes are set with `chmod`/`fchmod` after
/// creation, since `mkdir`/`open` modes are reduced by the umask, and looser modes left by an
/// older version are tightened (and reported) rather than refused.
package enum PrivateFiles {
    /// The mode of directories holding state.
    package static let directoryMode: mode_t = 0o700
    /// The mode of files holding state.
    package static let fileMode: mode_t = 0o600

    /// Why a path could not be made private.
    package struct Failure: Error, CustomStringConvertible, Sendable {
        /// The path and what failed, e.g. the `errno` text of `chmod`.
        package let description: String
    }

    /// Creates `path` (and missing parents) as a private directory, or tightens an existing one.
    /// Returns true when an existing directory was accessible to group or others and was tightened.
    @discardableResult
    package static func prepareDirectory(_ path: String) throws(Failure) -> Bool {
        var st = stat()
        if stat(path, &st) != 0 {
            guard errno == ENOENT else { throw Failure(description: "cannot stat \(path): \(String(cString: strerror(errno)))") }
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty, !FileManager.default.fileExists(atPath: parent) {
                do { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) } catch {
                    throw Failure(description: "cannot create \(parent): \(error.localizedDescription)")
                }
            }
            if mkdir(path, directoryMode) != 0, errno != EEXIST {
                throw Failure(description: "cannot create \(path): \(String(cString: strerror(errno)))")
            }
            guard chmod(path, directoryMode) == 0 else {
                throw Failure(description: "cannot set mode 0700 on \(path): \(String(cString: strerror(errno)))")
            }
            return false
        }
        guard st.st_mode & S_IFMT == S_IFDIR else { throw Failure(description: "\(path) exists and is not a directory") }
        guard st.st_mode & 0o7777 != directoryMode else { return false }
        guard chmod(path, directoryMode) == 0 else {
            throw Failure(description: "\(path) has mode \(octal(st.st_mode)) and cannot be made 0700: \(String(cString: strerror(errno)))")
        }
        return st.st_mode & 0o077 != 0
    }

    /// Creates `path` as an empty private file if it does not exist, and makes an existing one
    /// private. SQLite creates a database's `-wal` and `-shm` files with the database file's mode,
    /// so a database created through this first gets private companions.
    package static func prepareFile(_ path: String) throws(Failure) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, fileMode)
        guard fd >= 0 else { throw Failure(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        try makePrivate(fd: fd, path: path)
    }

    /// Tightens an existing file to 0600; a missing file is not an error.
    package static func tightenIfPresent(_ path: String) throws(Failure) {
        var st = stat()
        guard stat(path, &st) == 0 else { return }
        if st.st_mode & 0o7777 != fileMode, chmod(path, fileMode) != 0 {
            throw Failure(description: "\(path) has mode \(octal(st.st_mode)) and cannot be made 0600: \(String(cString: strerror(errno)))")
        }
    }

    /// Sets an open file's mode to 0600 (when it is not already).
    package static func makePrivate(fd: Int32, path: String) throws(Failure) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw Failure(description: "cannot stat \(path): \(String(cString: strerror(errno)))") }
        if st.st_mode & 0o7777 != fileMode, fchmod(fd, fileMode) != 0 {
            throw Failure(description: "\(path) has mode \(octal(st.st_mode)) and cannot be made 0600: \(String(cString: strerror(errno)))")
        }
    }

    static func octal(_ m: mode_t) -> String { "0" + String(m & 0o7777, radix: 8) }
}
