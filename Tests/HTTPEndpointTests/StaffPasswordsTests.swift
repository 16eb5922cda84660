import Foundation
import HTTPEndpoint
import TestSupport
import Testing

/// The console's staff file: mosquitto_passwd's own hashes verify, the file's mistakes are
/// refused with their line.
@Suite struct StaffPasswordsTests {
    /// A line made by the real `mosquitto_passwd` for `login` with `password`.
    static func mosquittoLine(_ login: String, _ password: String) throws -> String {
        let file = TemporaryPath.make("staff-passwd")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_passwd")
        p.arguments = ["-b", "-c", file, login, password]
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw Failure("mosquitto_passwd exited \(p.terminationStatus)") }
        return try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    struct Failure: Error { let m: String; init(_ m: String) { self.m = m } }

    @Test func mosquittoPasswdHashesVerify() throws {
        let kim = try Self.mosquittoLine("nurse.kim", "correct horse battery")
        let lee = try Self.mosquittoLine("physio.lee", "ünïcode pässword")
        #expect(kim.hasPrefix("nurse.kim:$7$101$"))
        let staff = try StaffPasswords(parsing: "# the ward\n\(kim) teams=ward-a\n\n\(lee) teams=ward-a,ward-b\n")
        #expect(staff.logins == ["nurse.kim", "physio.lee"])
        #expect(staff.verify(login: "nurse.kim", password: Array("correct horse battery".utf8)) == ["ward-a"])
        #expect(staff.verify(login: "physio.lee", password: Array("ünïcode pässword".utf8)) == ["ward-a", "ward-b"])
        #expect(staff.verify(login: "nurse.kim", password: Array("correct horse batterY".utf8)) == nil)
        #expect(staff.verify(login: "nurse.kim", password: Array("".utf8)) == nil)
        #expect(staff.verify(login: "physio.lee", password: Array("correct horse battery".utf8)) == nil)
        #expect(staff.verify(login: "nobody", password: Array("correct horse battery".utf8)) == nil)
        #expect(staff.verify(login: "nurse.kim", password: [UInt8](repeating: 0x61, count: 2000)) == nil)
    }

    @Test(arguments: [
        ("nurse.kim $7$101$aaaa$bbbb teams=a", "line 1: expected LOGIN:HASH"),
        ("nurse kim:$7$101$aUNx0yvvdgBzUSw1$\(String(repeating: "A", count: 86))== teams=a", "line 1: expected LOGIN:HASH"),
        ("nurse.kim:$6$101$aUNx0yvvdgBzUSw1$x teams=a", "line 1: the hash of 'nurse.kim' must be mosquitto_passwd's"),
        ("nurse.kim:$7$0$aUNx0yvvdgBzUSw1$\(String(repeating: "A", count: 86))== teams=a", "line 1: the hash of 'nurse.kim' must be"),
        ("nurse.kim:$7$101$aUNx0yvvdgBzUSw1$\(String(repeating: "A", count: 86))==", "line 1: after the hash of 'nurse.kim' comes 'teams="),
        ("nurse.kim:$7$101$aUNx0yvvdgBzUSw1$\(String(repeating: "A", count: 86))== teams=a/b", "line 1: the teams of 'nurse.kim' are"),
        ("", "no logins"),
        (
            "a:$7$101$aUNx0yvvdgBzUSw1$\(String(repeating: "A", count: 86))== teams=t\na:$7$101$aUNx0yvvdgBzUSw1$\(String(repeating: "A", count: 86))== teams=t",
            "line 2: the login 'a' is given twice"
        )
    ])
    func badFilesAreRefused(text: String, message: String) {
        #expect {
            _ = try StaffPasswords(parsing: text)
        } throws: { error in
            ((error as? StaffPasswords.Problem)?.description ?? "").hasPrefix(message)
        }
    }
}
