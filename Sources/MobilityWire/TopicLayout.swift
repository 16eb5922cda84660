#if canImport(Glibc)
    import Glibc
#endif

/// The MQTT topic layout of the wire contract (`docs/mqtt-api.md`).
package struct TopicLayout: Hashable, Sendable {
    /// The root the daemon and the tools use unless told otherwise (`--topic-root`).
    package static let defaultRoot = "mobility/v1"
    /// The root, default ``defaultRoot``.
    package let root: String
    /// `{root}/users/` as bytes, built once (parsing runs for every message).
    private let usersPrefixUTF8: [UInt8]

    /// Creates a layout under a root.
    package init(root: String = TopicLayout.defaultRoot) {
        self.root = root
        usersPrefixUTF8 = Array((root + "/users/").utf8)
    }

    /// Inbound message kinds.
    package enum Inbound: String, Sendable, CaseIterable {
        case samples, events, deletions, profile
    }

    /// A parsed inbound topic.
    package enum Parsed: Equatable, Sendable {
        case inbound(user: String, kind: Inbound)
        case invalidUser(String)
        case other
    }

    /// The subscription filters the daemon uses.
    package var subscriptions: [String] { Inbound.allCases.map { "\(root)/users/+/\($0.rawValue)" } }

    /// Parses a topic. Runs for every message, so it works on the UTF-8 bytes: no `Character`
    /// (grapheme) walking, one `String` made (the user id).
    package func parse(_ topic: String) -> Parsed {
        var t = topic
        return t.withUTF8 { parse(utf8: $0) }
    }

    /// Parses a topic given as UTF-8 bytes (a recorded traffic line's, without making the topic a `String`).
    package func parse(utf8 b: UnsafeBufferPointer<UInt8>) -> Parsed {
        let prefixCount = usersPrefixUTF8.count
        guard b.count > prefixCount, let base = b.baseAddress,
            usersPrefixUTF8.withUnsafeBufferPointer({ memcmp($0.baseAddress!, base, prefixCount) == 0 })
        else { return .other }
        var slash = b.count - 1
        while slash >= prefixCount, b[slash] != UInt8(ascii: "/") { slash -= 1 }
        guard slash >= prefixCount else { return .other }
        let userBytes = UnsafeBufferPointer(rebasing: b[prefixCount..<slash])
        guard let kind = TopicLayout.inbound(UnsafeBufferPointer(rebasing: b[(slash + 1)...])) else { return .other }
        let user = String(decoding: userBytes, as: UTF8.self)
        guard TopicLayout.isValidUser(userBytes) else { return .invalidUser(user) }
        return .inbound(user: user, kind: kind)
    }

    private static func inbound(_ b: UnsafeBufferPointer<UInt8>) -> Inbound? {
        // By length and first byte, then the bytes (this runs for every message: no String comparison).
        func equals(_ s: StaticString) -> Bool { b.count == s.utf8CodeUnitCount && memcmp(b.baseAddress!, s.utf8Start, b.count) == 0 }
        switch (b.count, b.first) {
        case (7, UInt8(ascii: "s")?): return equals("samples") ? .samples : nil
        case (6, UInt8(ascii: "e")?): return equals("events") ? .events : nil
        case (9, UInt8(ascii: "d")?): return equals("deletions") ? .deletions : nil
        case (7, UInt8(ascii: "p")?): return equals("profile") ? .profile : nil
        default: return nil
        }
    }

    private static func isValidUser(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !b.isEmpty, b.count <= 64 else { return false }
        return b.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 45 || c == 95
        }
    }

    /// User ids are 1–64 characters of `A–Z a–z 0–9 _ -`, the same topic level on every broker:
    /// no `.`, which NATS takes as its subject separator (the publisher is disconnected) and
    /// RabbitMQ's MQTT plugin turns into `/` (docs/brokers.md).
    package static let userAlphabet = "A–Z a–z 0–9 _ -"

    /// Whether `s` is a valid user id: 1–64 characters of ``userAlphabet``.
    package static func isValidUser(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { isValidUser($0) }
    }

    /// `users/{user}/samples` (in).
    package func samples(_ user: String) -> String { "\(root)/users/\(user)/samples" }
    /// `users/{user}/events` (in).
    package func events(_ user: String) -> String { "\(root)/users/\(user)/events" }
    /// `users/{user}/deletions` (in).
    package func deletions(_ user: String) -> String { "\(root)/users/\(user)/deletions" }
    /// `users/{user}/profile` (in, retained).
    package func profile(_ user: String) -> String { "\(root)/users/\(user)/profile" }
    /// `users/{user}/alerts/{rule}` (out, retained while firing).
    package func alert(_ user: String, rule: String) -> String { "\(root)/users/\(user)/alerts/\(rule)" }
    /// `users/{user}/series` (out): a user-day's series values, one message (``DailySeries``).
    package func series(_ user: String) -> String { "\(root)/users/\(user)/series" }
    /// `users/{user}/rejected` (out).
    package func rejected(_ user: String) -> String { "\(root)/users/\(user)/rejected" }
    /// The retained commit acknowledgement of a user's samples.
    package func acks(_ user: String) -> String { "\(root)/users/\(user)/acks" }
    /// Rejections of messages whose topic names no valid user.
    package var rejectedUnknown: String { "\(root)/rejected" }
    /// `daemon/{instance}/status` (out, retained).
    package func status(_ instance: String) -> String { "\(root)/daemon/\(instance)/status" }
}
