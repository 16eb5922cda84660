import Foundation
import Glibc

/// A unix datagram socket standing in for systemd's `NOTIFY_SOCKET`: collects the sd_notify(3)
/// messages a daemon sends, each with its arrival time, on a thread of its own.
package final class NotifySocket: @unchecked Sendable {
    /// The socket's path, for `NOTIFY_SOCKET`.
    package let path: String
    private let inbox: Inbox

    /// What the reading thread shares with the socket's owner (the thread must not keep the owner alive).
    private final class Inbox: @unchecked Sendable {
        let fd: Int32
        let lock = NSLock()
        var received: [(at: Date, text: String)] = []
        var closed = false
        init(fd: Int32) { self.fd = fd }

        func read() {
            var buf = [UInt8](repeating: 0, count: 4096)
            while !lock.withLock({ closed }) {
                let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n > 0 {
                    let text = String(decoding: buf[0..<n], as: UTF8.self)
                    lock.withLock { received.append((Date(), text)) }
                }
            }
            close(fd)
        }
    }

    /// Binds a fresh socket in the temporary directory and starts reading.
    package init() throws {
        let path = "/tmp/mw-notify-\(UUID().uuidString.prefix(8)).sock"
        self.path = path
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket(AF_UNIX) failed") }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { buf in
            for (i, b) in path.utf8.enumerated() { buf[i] = b }
        }
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard ok == 0 else { close(fd); throw HarnessError("cannot bind \(path): \(String(cString: strerror(errno)))") }
        var tv = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let inbox = Inbox(fd: fd)
        self.inbox = inbox
        Thread { inbox.read() }.start()
    }

    /// Every message so far, in arrival order, with its arrival time.
    package var messages: [(at: Date, text: String)] { inbox.lock.withLock { inbox.received } }

    /// The messages that have a line `line` (e.g. `READY=1`).
    package func messages(with line: String) -> [String] {
        messages.map(\.text).filter { $0.split(separator: "\n").contains { $0 == line } }
    }

    deinit {
        inbox.lock.withLock { inbox.closed = true }
        unlink(path)
    }
}
