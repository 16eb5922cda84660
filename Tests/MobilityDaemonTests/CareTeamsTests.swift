import Foundation
import Glibc
import TestSupport
import Testing

@testable import MobilityDaemon

/// The care-team mapping file and the `CareTeams` lookup (the mapping wins over the profile).
struct CareTeamsTests {
    @Test func parsesAndReportsEveryBadLine() {
        let good = CareTeams.parse("# teams\nann physio-north,gait-lab\n\nbob ward-a  # note\n")
        #expect(good.errors.isEmpty)
        #expect(good.assigned == ["ann": ["physio-north", "gait-lab"], "bob": ["ward-a"]])
        let bad = CareTeams.parse("ann Ward\nbob\nann x\nc/d x\nann y\neve " + (1...9).map { "t\($0)" }.joined(separator: ","))
        #expect(bad.errors.map(\.line) == [1, 2, 4, 5, 6])  // line 3 is good (line 1 was not), so line 5 repeats ann
        let again = CareTeams.parse("ann a\nann b\n")
        #expect(again.errors.map(\.description) == ["2: user 'ann' is listed twice"])
    }

    @Test func theMappingWinsOverTheProfile() {
        let t = CareTeams(assigned: ["ann": ["south"]])
        #expect(t.setProfileTeams(["north"], of: "ann") == (["south"], ["south"]))
        #expect(t.teams(of: "ann") == ["south"])
        #expect(t.setProfileTeams(["north"], of: "bob") == ([], ["north"]))
        #expect(t.setProfileTeams(["east"], of: "bob") == (["north"], ["east"]))
        #expect(t.user("bob", belongsTo: "east") && !t.user("bob", belongsTo: "north"))
    }

    @Test func aLooseOrBadFileIsAConfigurationError() throws {
        let path = TemporaryPath.make("mw-ct")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "ann ward-a\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o644)
        #expect(throws: DaemonConfiguration.Problem.self) { try DaemonConfiguration.load(arguments: ["--care-teams", path], environment: [:]) }
        chmod(path, 0o600)
        #expect(try DaemonConfiguration.load(arguments: ["--care-teams", path], environment: [:]).careTeams == ["ann": ["ward-a"]])
        try "ann Ward-A\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        do { _ = try DaemonConfiguration.load(arguments: ["--care-teams", path], environment: [:]); Issue.record("accepted") } catch {
            #expect(error.description.hasPrefix("\(path):1: care team 'Ward-A'"))
        }
    }
}
