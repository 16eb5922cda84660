import Foundation

/// Locations in the repository, for tests that read shipped files.
package enum RepoPaths {
    /// The repository root (the directory holding Package.swift).
    package static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url.path }
        }
        return FileManager.default.currentDirectoryPath
    }()

    /// `rules/`.
    package static var rules: String { root + "/rules" }
}
