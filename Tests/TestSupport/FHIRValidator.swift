import Foundation

/// The independent FHIR R4 validator of the tests: `scripts/fhir-validate.py`, run with the
/// Python of the venv `scripts/install-deps.sh` installs fhir.resources into
/// (`MOBILITYWATCH_FHIR_VENV`, default `~/.cache/mobilitywatch/fhir-venv`).
package enum FHIRValidator {
    /// What the validator said of some resources.
    package struct Verdict: Sendable {
        /// True when every resource is valid (exit 0).
        package var valid: Bool
        /// Its output: a line per resource, `ok FILE` or `invalid FILE: reasons`.
        package var output: String
    }

    /// The venv's Python.
    package static var python: String {
        let env = ProcessInfo.processInfo.environment
        let venv = env["MOBILITYWATCH_FHIR_VENV"] ?? ((env["HOME"] ?? "/root") + "/.cache/mobilitywatch/fhir-venv")
        return venv + "/bin/python"
    }

    /// Validates resources (JSON texts); throws when the validator cannot run at all.
    package static func validate(_ resources: [String]) throws -> Verdict {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw HarnessError("the FHIR validator is not installed at \(python); run scripts/install-deps.sh")
        }
        let dir = TemporaryPath.make("mw-fhir")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var files: [String] = []
        for (i, r) in resources.enumerated() {
            let f = dir + "/resource-\(i).json"
            try r.write(toFile: f, atomically: true, encoding: .utf8)
            files.append(f)
        }
        return try validate(files: files)
    }

    /// Validates resource files.
    package static func validate(files: [String]) throws -> Verdict {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = [RepoPaths.root + "/scripts/fhir-validate.py"] + files
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard p.terminationStatus == 0 || p.terminationStatus == 1 else { throw HarnessError("fhir-validate.py failed to run: \(text)") }
        return Verdict(valid: p.terminationStatus == 0, output: text)
    }
}
