import EngineTestSupport
import MobilityModel

@testable import Ingest
@testable import RuleEngine

/// Builds wire payloads (exactly as gateways publish them) for the ingestor tests.
enum WireTraffic {
    /// A samples payload: one walking-speed sample per hour given, on day `d` (UTC, from `day0`).
    static func samples(_ prefix: String, day d: Int, hours: [Int], speed: Double = 1.2) -> [UInt8] {
        let items = hours.map { h in
            let t = utc.startOfDay(day0 + DayNumber(d)).adding(seconds: Int64(h * 3600))
            return
                "{\"id\":\"\(prefix)-\(d)-\(h)\",\"type\":\"walkingSpeed\",\"value\":\(speed),\"unit\":\"m/s\",\"start\":\"\(t)\",\"end\":\"\(t)\",\"source\":{\"bundleId\":\"com.apple.health.x\"}}"
        }
        return Array(("[" + items.joined(separator: ",") + "]").utf8)
    }

    /// One sample at an absolute time.
    static func sample(_ id: String, at t: Timestamp, speed: Double = 1.2) -> [UInt8] {
        Array(
            "{\"id\":\"\(id)\",\"type\":\"walkingSpeed\",\"value\":\(speed),\"unit\":\"m/s\",\"start\":\"\(t)\",\"end\":\"\(t)\",\"source\":{\"bundleId\":\"com.apple.health.x\"}}"
                .utf8)
    }

    /// An events payload of entry objects.
    static func events(_ entries: [String]) -> [UInt8] { Array(("[" + entries.joined(separator: ",") + "]").utf8) }

    static func samplesTopic(_ u: String) -> String { "mobility/v1/users/\(u)/samples" }
    static func eventsTopic(_ u: String) -> String { "mobility/v1/users/\(u)/events" }
}

extension Array where Element == EngineOutput {
    /// The rejections' reasons (raw strings, as on the wire).
    var rejectionReasons: [String] { compactMap { if case .rejected(_, _, let r) = $0 { return r.reason.rawValue } else { return nil } } }
    var rejections: [Rejection] { compactMap { if case .rejected(_, _, let r) = $0 { return r } else { return nil } } }
}
