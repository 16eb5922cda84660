import MobilityModel
import Testing

@testable import CareReports

/// Lane labels sit beside their band: a label too long for either side is shortened, keeps its
/// state in parentheses, and its text never runs over the band.
@Suite struct TimelineLanesTests {
    let scale = DayScale(first: 0, last: 59, left: 40, width: 360)

    func item(_ first: DayNumber, _ last: DayNumber, _ label: String) -> TimelineLanes.Item {
        TimelineLanes.Item(first: first, last: last, label: label, detail: label, fill: "#fff", ink: "#000", cssClass: "alert")
    }

    /// The label's horizontal extent as drawn.
    func textSpan(_ p: (item: TimelineLanes.Item, labelX: Double, anchorEnd: Bool)) -> ClosedRange<Double> {
        let w = TimelineLanes.width(p.item.label) - 6
        return p.anchorEnd ? (p.labelX - w)...p.labelX : p.labelX...(p.labelX + w)
    }

    @Test func aLongLabelInTheMiddleIsShortenedBesideItsBand() throws {
        let long = "double support regression (withdrawn)"
        let lanes = TimelineLanes([item(33, 35, long)], scale: scale, maxLanes: 2)
        let placed = try #require(lanes.lanes.first?.first)
        let band = scale.slotStart(33)...scale.slotStart(36)
        let span = textSpan(placed)
        #expect(!span.overlaps(band), "\(span) over the band \(band)")
        #expect(span.lowerBound >= scale.left && span.upperBound <= scale.left + scale.width)
        #expect(placed.item.label.hasSuffix("… (withdrawn)") && placed.item.label.count < long.count, "\(placed.item.label)")
        #expect(placed.item.detail == long)
    }

    @Test func labelsThatFitAreLeftWhole() throws {
        let lanes = TimelineLanes([item(2, 5, "injury"), item(55, 58, "stalled recovery (active)")], scale: scale, maxLanes: 2)
        let labels = lanes.lanes.joined().map(\.item.label)
        #expect(labels == ["injury", "stalled recovery (active)"])
        #expect(TimelineLanes.shortened("stalled recovery (active)", to: 1000) == "stalled recovery (active)")
    }
}
