import Foundation

/// Loads rule sources from files and directories (`*.rules`, sorted, not recursive into `tests/`).
package enum RuleSet {
    /// Reads the rule files named by `paths` (files or directories).
    /// - Returns: the sources, and errors for paths that could not be read.
    package static func load(_ paths: [String]) -> (sources: [SourceFile], errors: [String]) {
        var sources: [SourceFile] = []
        var errors: [String] = []
        let fm = FileManager.default
        for path in paths {
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDir) else {
                errors.append("\(path): no such file or directory")
                continue
            }
            var files: [String] = []
            if isDir.boolValue {
                let names = (try? fm.contentsOfDirectory(atPath: path)) ?? []
                files = names.filter { $0.hasSuffix(".rules") }.sorted().map { (path as NSString).appendingPathComponent($0) }
                if files.isEmpty { errors.append("\(path): no .rules files") }
            } else {
                files = [path]
            }
            for f in files {
                // Never more than the size limit and a byte: a larger file is refused by the
                // checker (`file-too-large`) without being read whole.
                guard let h = FileHandle(forReadingAtPath: f), let data = try? h.read(upToCount: RuleLimits.maxFileBytes + 1) ?? Data() else {
                    errors.append("\(f): cannot read")
                    continue
                }
                try? h.close()
                if data.count > RuleLimits.maxFileBytes {
                    sources.append(SourceFile(path: f, text: String(decoding: data, as: UTF8.self)))
                    continue
                }
                guard let text = String(data: data, encoding: .utf8) else { errors.append("\(f): not UTF-8"); continue }
                sources.append(SourceFile(path: f, text: text))
            }
        }
        return (sources, errors)
    }
}
