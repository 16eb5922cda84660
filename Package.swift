// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "MobilityWatch",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "mobilityctl", targets: ["mobilityctl"]),
    ],
    targets: [
        // Layers, bottom to top.
        .target(name: "MobilityModel", swiftSettings: strict),
        .target(name: "RuleLanguage", dependencies: ["MobilityModel"], swiftSettings: strict),
        .target(name: "RuleEngine", dependencies: ["MobilityModel", "RuleLanguage"], swiftSettings: strict),
        .target(name: "RuleTesting", dependencies: ["MobilityModel", "RuleLanguage", "RuleEngine"], swiftSettings: strict),

        // Thin executables.
        .executableTarget(name: "mobilityctl", dependencies: ["RuleLanguage", "RuleEngine", "RuleTesting"], swiftSettings: strict),

        // Tests mirror the targets.
        .target(name: "TestSupport", dependencies: ["MobilityModel"], path: "Tests/TestSupport", swiftSettings: strict),
        .testTarget(name: "MobilityModelTests", dependencies: ["MobilityModel", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "RuleLanguageTests", dependencies: ["RuleLanguage", "TestSupport"],
                    exclude: ["Golden"], swiftSettings: strict),
        .testTarget(name: "RuleEngineTests", dependencies: ["RuleEngine", "RuleLanguage", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "RuleTestingTests", dependencies: ["RuleTesting", "TestSupport"], swiftSettings: strict),
    ]
)
