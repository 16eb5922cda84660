import Foundation
import Synchronization

/// Paths the tests make under the temporary directory (state directories, rule copies, scratch
/// files), removed, with all below them, when the test process exits: a run leaves nothing in
/// /tmp, whether its tests pass or fail and whoever (the test, a daemon it starts) created the
/// path, and a path stays while the process may still use it (a later daemon on the same state, a
/// store opened on it). To look at them after a failure, run with `MW_KEEP_TEST_TEMP=1`; a crashed
/// run keeps them too.
package enum TemporaryPath {
    private static let registered = Mutex<[String]>([])

    /// A fresh path `<tmp>/<prefix>-<8 hex digits><suffix>`, not created, removed at exit.
    package static func make(_ prefix: String, suffix: String = "") -> String {
        let path = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString.prefix(8))\(suffix)"
        removeAtExit(path)
        return path
    }

    /// Removes `path` (a file or a directory tree) when the test process exits.
    package static func removeAtExit(_ path: String) {
        let first = registered.withLock { paths in
            paths.append(path)
            return paths.count == 1
        }
        if first { atexit { TemporaryPath.removeAll() } }
    }

    /// Removes every registered path that still exists.
    static func removeAll() {
        guard ProcessInfo.processInfo.environment["MW_KEEP_TEST_TEMP"] != "1" else { return }
        for p in registered.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: p) }
    }
}
