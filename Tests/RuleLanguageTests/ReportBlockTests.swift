import Foundation
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

/// The `report` block: what a checked block declares. Its diagnostics are in the
/// golden case `report.bad`.
@Suite struct ReportBlockTests {
    @Test func theShippedReportDeclaresThePanelsInTheirUnits() throws {
        let (sources, errors) = RuleSet.load([RepoPaths.root + "/rules"])
        #expect(errors.isEmpty)
        let program = try #require(Checker.check(sources).program)
        let report = try #require(program.report)
        let speed = try #require(report.speed)
        #expect(speed.daily == "speed_p95" && speed.smoothed == "speed_7d" && speed.baselineDays == 30 && speed.baselineEvent == "injury")
        #expect(speed.unit.symbol == "mph" && abs(speed.unit.toSI - 0.44704) < 1e-12)
        let ds = try #require(report.doubleSupport)
        #expect(ds.daily == "double_support" && ds.unit.symbol == "%")
        let walk = try #require(report.sixMinuteWalk)
        #expect(walk.clinic == "six_minute_walk_clinic" && walk.watch == "six_minute_walk_watch" && walk.provisionalRule == "uncalibrated_6mwd")
        #expect(report.conditions.map(\.label) == ["device", "user_entered"] && report.conditions.allSatisfy { $0.group == "source" })
        #expect(report.explanations == ["gait_quality_explanation"])
    }

    @Test func fieldsOnOneLineDefaultsAndStringLabels() throws {
        let text = try String(contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Golden/report.good.rules", encoding: .utf8)
        let report = try #require(Checker.check(text: text).program?.report)
        #expect(report.speed?.baselineDays == 28 && report.speed?.unit.symbol == "km/h")
        // no unit: the daily series' own; no baseline, no smoothed series
        #expect(report.doubleSupport?.unit.symbol == "%" && report.doubleSupport?.baselineDays == nil && report.doubleSupport?.smoothed == nil)
        #expect(report.sixMinuteWalk?.unit.symbol == "ft")
        #expect(report.conditions == [.init(group: "source", label: "device (phone)", series: "device_count")])
        #expect(report.explanations == ["slower"])  // named twice, quoted once
    }

    @Test func aRuleSetWithoutAReportHasNone() throws {
        let program = try #require(Checker.check(text: "series s = mean(walkingSpeed)\n").program)
        #expect(program.report == nil)
    }

    @Test func aReportAcrossFilesIsOneBlockPerRuleSet() {
        let a = SourceFile(path: "a.rules", text: "series s = mean(walkingSpeed)\nreport { walking_speed { daily s } }\n")
        let b = SourceFile(path: "b.rules", text: "report { double_support { daily s } }\n")
        let d = Checker.check([a, b]).diagnostics
        #expect(d.map(\.id) == [.duplicateName])
        #expect(d.first?.range.file == 1)
    }

    @Test func unitsOfSeveralTokensAreOneUnit() throws {
        let text = "series v = max(vo2Max)\nreport { walking_speed { daily v unit ml/(kg*min) } }\n"
        let report = try #require(Checker.check(text: text).program?.report)
        #expect(report.speed?.unit == MeasureUnit.vo2)
    }
}
