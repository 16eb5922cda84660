import Foundation
import TestSupport
import Testing

/// The library targets are layers and their edges point one way, down: what Package.swift
/// declares and what the sources import. A new target must be given a layer here.
@Suite struct PackageLayoutTests {
    /// The layers, bottom to top (the order Package.swift's comment gives). C shims are below all.
    static let layers: [[String]] = [
        ["MobilityModel"],
        ["MobilityWire", "RuleLanguage", "MQTTTransport", "HTTPEndpoint", "JetStreamAccess"],
        ["RuleEngine"],
        ["Ingest", "CareReports", "MobilityFHIR", "RuleTesting"],
        ["StateStore", "Simulator"],
        ["PostgresStore"],
        ["MobilityDaemon"],
        ["mobilityd", "mobilityctl", "mobility-sim", "mobility-bench"]
    ]

    /// Modules of the toolchain and the system any target may import.
    static let platform: Set<String> = ["Foundation", "Glibc", "Dispatch", "Synchronization"]

    /// A target as Package.swift declares it.
    struct Target {
        var name: String
        var kind: String
        var dependencies: [String]
        var isTestCode: Bool
    }

    /// The targets of the manifest, read from its text: each `.kind(name: "…", dependencies: […] …)`.
    static func targets() throws -> [Target] {
        let text = try String(contentsOfFile: RepoPaths.root + "/Package.swift", encoding: .utf8)
        let chars = Array(text)
        var out: [Target] = []
        for kind in ["systemLibrary", "target", "executableTarget", "testTarget"] {
            let opener = Array(".\(kind)(")
            var i = 0
            while i + opener.count <= chars.count {
                guard Array(chars[i..<i + opener.count]) == opener else {
                    i += 1
                    continue
                }
                // The call's text, up to its balanced closing parenthesis.
                var depth = 0
                var j = i + opener.count - 1
                repeat {
                    if chars[j] == "(" || chars[j] == "[" { depth += 1 }
                    if chars[j] == ")" || chars[j] == "]" { depth -= 1 }
                    j += 1
                } while depth > 0 && j < chars.count
                let call = String(chars[i..<j])
                i = j
                guard let name = quoted(after: "name:", in: call).first else { continue }
                var deps: [String] = []
                if let r = call.range(of: "dependencies: [") {
                    let rest = call[r.upperBound...]
                    deps = quoted(in: String(rest[..<(rest.firstIndex(of: "]") ?? rest.endIndex)]))
                }
                out.append(Target(name: name, kind: kind, dependencies: deps, isTestCode: kind == "testTarget" || call.contains("path: \"Tests/")))
            }
        }
        return out
    }

    static func quoted(after label: String, in text: String) -> [String] {
        guard let r = text.range(of: label) else { return [] }
        return quoted(in: String(text[r.upperBound...]))
    }

    static func quoted(in text: String) -> [String] {
        text.split(separator: "\"", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    /// The modules a target's Swift sources import.
    static func imports(of target: String) throws -> [String: Set<String>] {
        let dir = RepoPaths.root + "/Sources/" + target
        var out: [String: Set<String>] = [:]
        for file in try FileManager.default.subpathsOfDirectory(atPath: dir) where file.hasSuffix(".swift") {
            for line in try String(contentsOfFile: dir + "/" + file, encoding: .utf8).split(separator: "\n") {
                var words = line.split(separator: " ").map(String.init)
                if words.first == "@testable" { words.removeFirst() }
                guard words.first == "import", words.count >= 2 else { continue }
                let path =
                    words.count >= 3 && ["struct", "class", "enum", "protocol", "func", "var", "let", "typealias"].contains(words[1]) ? words[2] : words[1]
                out[file, default: []].insert(String(path.split(separator: ".")[0]))
            }
        }
        return out
    }

    @Test func everyTargetHasALayerAndDependsOnlyOnLowerLayers() throws {
        let all = try Self.targets()
        #expect(all.count > 20, "the manifest's targets were not read")
        let shims = Set(all.filter { $0.kind == "systemLibrary" }.map(\.name) + ["CSimdJSON"])
        var layer: [String: Int] = [:]
        for (k, names) in Self.layers.enumerated() { for n in names { layer[n] = k + 1 } }
        for t in all where !t.isTestCode && !shims.contains(t.name) {
            guard let own = layer[t.name] else {
                Issue.record("target \(t.name) has no layer in PackageLayoutTests.layers")
                continue
            }
            for d in t.dependencies where !shims.contains(d) {
                let theirs = layer[d] ?? .max
                #expect(theirs < own, "\(t.name) (layer \(own)) depends on \(d) (layer \(theirs == .max ? "none" : String(theirs))): edges point down")
            }
        }
    }

    @Test func sourcesImportOnlyWhatTheirTargetDeclares() throws {
        for t in try Self.targets() where !t.isTestCode && t.kind != "systemLibrary" && t.name != "CSimdJSON" {
            for (file, modules) in try Self.imports(of: t.name) {
                let undeclared = modules.subtracting(t.dependencies).subtracting(Self.platform)
                #expect(undeclared.isEmpty, "Sources/\(t.name)/\(file) imports \(undeclared.sorted()), which \(t.name) does not declare")
            }
        }
    }

    @Test func theEngineDependsOnAndImportsOnlyTheModelAndTheLanguage() throws {
        let engine = try #require(try Self.targets().first { $0.name == "RuleEngine" })
        #expect(Set(engine.dependencies) == ["MobilityModel", "RuleLanguage"])
        let imports = try Self.imports(of: "RuleEngine")
        #expect(!imports.isEmpty)
        for (file, modules) in imports {
            #expect(modules.isSubset(of: ["MobilityModel", "RuleLanguage"]), "Sources/RuleEngine/\(file) imports \(modules.sorted())")
        }
    }
}
