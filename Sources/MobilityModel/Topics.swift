/// The MQTT topic layout of the wire contract (`docs/mqtt-api.md`).
public struct TopicLayout: Hashable, Sendable {
    /// The root, default `mobility/v1`.
    public let root: String
    /// `{root}/users/`, built once (parsing runs for every message).
    private let usersPrefix: String

    /// Creates a layout under a root.
    public init(root: String = "mobility/v1") {
        self.root = root
        usersPrefix = root + "/users/"
    }

    /// Inbound message kinds.
    public enum Inbound: String, Sendable, CaseIterable {
        case samples, events, deletions, profile
    }

    /// A parsed inbound topic.
    public enum Parsed: Equatable, Sendable {
        case inbound(user: String, kind: Inbound)
        case invalidUser(String)
        case other
    }

    /// The subscription filters the daemon uses.
    public var subscriptions: [String] { Inbound.allCases.map { "\(root)/users/+/\($0.rawValue)" } }

    /// Parses a topic.
    public func parse(_ topic: String) -> Parsed {
        guard topic.hasPrefix(usersPrefix) else { return .other }
        let rest = topic.dropFirst(usersPrefix.count)
        guard let slash = rest.lastIndex(of: "/") else { return .other }
        let user = String(rest[..<slash])
        guard let kind = Inbound(rawValue: String(rest[rest.index(after: slash)...])) else { return .other }
        guard TopicLayout.isValidUser(user) else { return .invalidUser(user) }
        return .inbound(user: user, kind: kind)
    }

    /// User ids are 1–64 characters of `A–Z a–z 0–9 . _ -`, safe in any topic.
    public static func isValidUser(_ s: String) -> Bool {
        guard !s.isEmpty, s.utf8.count <= 64 else { return false }
        return s.utf8.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 45 || c == 46 || c == 95
        }
    }

    /// `users/{user}/samples` (in).
    public func samples(_ user: String) -> String { "\(root)/users/\(user)/samples" }
    /// `users/{user}/events` (in).
    public func events(_ user: String) -> String { "\(root)/users/\(user)/events" }
    /// `users/{user}/deletions` (in).
    public func deletions(_ user: String) -> String { "\(root)/users/\(user)/deletions" }
    /// `users/{user}/profile` (in, retained).
    public func profile(_ user: String) -> String { "\(root)/users/\(user)/profile" }
    /// `users/{user}/alerts/{rule}` (out, retained while firing).
    public func alert(_ user: String, rule: String) -> String { "\(root)/users/\(user)/alerts/\(rule)" }
    /// `users/{user}/series/{name}` (out).
    public func series(_ user: String, name: String) -> String { "\(root)/users/\(user)/series/\(name)" }
    /// `users/{user}/rejected` (out).
    public func rejected(_ user: String) -> String { "\(root)/users/\(user)/rejected" }
    /// The retained commit acknowledgement of a user's samples.
    public func acks(_ user: String) -> String { "\(root)/users/\(user)/acks" }
    /// Rejections of messages whose topic names no valid user.
    public var rejectedUnknown: String { "\(root)/rejected" }
    /// `daemon/{instance}/status` (out, retained).
    public func status(_ instance: String) -> String { "\(root)/daemon/\(instance)/status" }
}
