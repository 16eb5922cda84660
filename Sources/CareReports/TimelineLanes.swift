import MobilityModel

/// Puts labelled day ranges (annotations, alert episodes) into a few horizontal lanes above a
/// chart so that neither bands nor labels overlap; what does not fit is counted, not drawn.
struct TimelineLanes {
    /// A labelled range.
    struct Item {
        /// Its first and last day, on the axis.
        var first: DayNumber
        var last: DayNumber
        /// The label drawn beside the band.
        var label: String
        /// The tooltip (`<title>`).
        var detail: String
        /// Fill and text colours.
        var fill: String
        var ink: String
        /// The element class (`annotation`, `alert alert-warning`…).
        var cssClass: String
        /// True when it runs on past the right edge (an active alert).
        var open: Bool = false
        /// What the legend groups it by (an alert's severity).
        var key: String = ""
    }

    /// The lanes, top first.
    private(set) var lanes: [[(item: Item, labelX: Double, anchorEnd: Bool)]] = []
    /// Items that found no lane.
    private(set) var dropped = 0

    /// Average advance of an 11-unit label character (generous, so labels do not collide).
    static let charWidth = 6.5

    /// The room a label takes, with its margin.
    static func width(_ label: String) -> Double { Double(label.count) * charWidth + 6 }

    /// `label` cut to fit `room` with an ellipsis, keeping a closing state in parentheses
    /// ("… (withdrawn)"), which says more than the end of a rule's name; the tooltip has it whole.
    static func shortened(_ label: String, to room: Double) -> String {
        let fits = max(1, Int((room - 6) / charWidth))
        guard label.count > fits else { return label }
        var suffix = ""
        if label.hasSuffix(")"), let open = label.lastIndex(of: "("), label.distance(from: open, to: label.endIndex) < fits / 2 {
            suffix = " " + label[open...]
        }
        return String(label.prefix(max(1, fits - suffix.count - 1))) + "…" + suffix
    }

    /// Lays `items` out on `scale` in at most `maxLanes` lanes.
    init(_ items: [Item], scale: DayScale, maxLanes: Int) {
        var ends: [Double] = []
        let right = scale.left + scale.width
        for var item in items.sorted(by: { ($0.first, $0.last) < ($1.first, $1.last) }) {
            let x0 = scale.slotStart(item.first), x1 = scale.slotStart(item.last + 1)
            var textWidth = Self.width(item.label)
            var labelX = x0 + 3, anchorEnd = false, extent = (x0, max(x1, x0 + textWidth))
            if x0 + textWidth > right {
                // Beside the band, never over it: left of it, else on the wider side, shortened.
                let leftRoom = x0 - 1 - scale.left, rightRoom = right - x1 - 1
                if textWidth > leftRoom && rightRoom > leftRoom {  // after the band
                    item.label = Self.shortened(item.label, to: rightRoom)
                    textWidth = Self.width(item.label)
                    labelX = x1 + 3
                    extent = (x0, x1 + 1 + textWidth)
                } else {
                    if textWidth > leftRoom {
                        item.label = Self.shortened(item.label, to: leftRoom)
                        textWidth = Self.width(item.label)
                    }
                    anchorEnd = true
                    labelX = x0 - 3
                    extent = (x0 - textWidth - 1, x1)
                }
            }
            if let lane = ends.firstIndex(where: { $0 + 2 <= extent.0 }) {
                ends[lane] = extent.1
                lanes[lane].append((item, labelX, anchorEnd))
            } else if ends.count < maxLanes {
                ends.append(extent.1)
                lanes.append([(item, labelX, anchorEnd)])
            } else {
                dropped += 1
            }
        }
    }
}
