// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "MobilityWatch",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "mobilityctl", targets: ["mobilityctl"]),
        .executable(name: "mobilityd", targets: ["mobilityd"]),
        .executable(name: "mobility-sim", targets: ["mobility-sim"])
    ],
    targets: [
        // System-library shims: one per C library.
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        .systemLibrary(name: "CLibXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CLibDeflate", pkgConfig: "libdeflate", providers: [.apt(["libdeflate-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CNATS", pkgConfig: "libnats", providers: [.apt(["libnats-dev"])]),

        // A C API over Debian's simdjson (C++) for the samples payload: the one hot JSON path (MobilityWire's).
        .target(name: "CSimdJSON", linkerSettings: [.linkedLibrary("simdjson")]),

        // Libraries in layers, bottom to top: a target depends only on targets of lower layers
        // (and the C shims above). PackageLayoutTests holds this order and fails on an edge that
        // points up or sideways.
        //  1 MobilityModel                  value types: samples, alerts, history, JSON, time, stable hashes
        //  2 MobilityWire, RuleLanguage,    the wire contract; rule text → checked program;
        //    MQTTTransport, HTTPEndpoint,   the brokers and the HTTP server (they know nothing of rules)
        //    JetStreamAccess
        //  3 RuleEngine                     pure: no I/O, no clock, no threads
        //  4 Ingest, CareReports,           messages → engine and replays; care reports;
        //    MobilityFHIR, RuleTesting      FHIR resources; rule unit tests
        //  5 StateStore, Simulator          durable engine state and the backend protocol; synthetic traffic
        //  6 PostgresStore                  the backend shared by instances
        //  7 MobilityDaemon                 the composition of all of the above
        //  8 the executables                argument parsing and a call into a library
        .target(name: "MobilityModel", swiftSettings: strict),
        .target(name: "MobilityWire", dependencies: ["MobilityModel", "CSimdJSON"], swiftSettings: strict),
        .target(name: "RuleLanguage", dependencies: ["MobilityModel"], swiftSettings: strict),
        .target(name: "MQTTTransport", dependencies: ["CMosquitto"], swiftSettings: strict),
        .target(name: "RuleEngine", dependencies: ["MobilityModel", "RuleLanguage"], swiftSettings: strict),
        .target(name: "Ingest", dependencies: ["MobilityModel", "MobilityWire", "RuleLanguage", "RuleEngine"], swiftSettings: strict),
        .target(name: "CareReports", dependencies: ["MobilityModel", "RuleLanguage"], swiftSettings: strict),
        .target(name: "MobilityFHIR", dependencies: ["MobilityModel", "RuleLanguage"], swiftSettings: strict),
        .target(name: "RuleTesting", dependencies: ["MobilityModel", "RuleLanguage", "RuleEngine"], swiftSettings: strict),
        .target(name: "HTTPEndpoint", dependencies: ["CMicroHTTPD", "CCrypto", "MobilityModel"], swiftSettings: strict),
        // Reads the JetStream streams and consumers behind NATS's MQTT listener (the partitioned start check), and consumes them (pull consumers).
        .target(name: "JetStreamAccess", dependencies: ["CNATS", "CCrypto"], swiftSettings: strict),
        .target(name: "StateStore", dependencies: ["CSQLite", "CLibDeflate", "MobilityModel", "RuleEngine"], swiftSettings: strict),
        // The state shared by instances: PostgreSQL behind the same StateBackend, fenced per partition.
        .target(name: "PostgresStore", dependencies: ["CLibPQ", "StateStore", "MobilityModel", "RuleEngine"], swiftSettings: strict),
        .target(
            name: "Simulator",
            dependencies: ["MobilityModel", "MobilityWire", "RuleEngine", "RuleLanguage", "Ingest", "MQTTTransport", "CLibXML2", "CZlib"],
            swiftSettings: strict),
        .target(
            name: "MobilityDaemon",
            dependencies: [
                "MobilityModel", "MobilityWire", "RuleLanguage", "RuleEngine", "Ingest", "MQTTTransport", "HTTPEndpoint", "StateStore", "PostgresStore",
                "CareReports", "CSystemd", "MobilityFHIR", "JetStreamAccess"
            ],
            swiftSettings: strict),

        // Thin executables.
        .executableTarget(name: "mobilityd", dependencies: ["MobilityDaemon"], swiftSettings: strict),
        .executableTarget(
            name: "mobility-sim", dependencies: ["Simulator", "MobilityModel", "MobilityWire", "MQTTTransport", "RuleEngine", "RuleLanguage", "Ingest"],
            swiftSettings: strict),
        .executableTarget(
            name: "mobility-bench",
            dependencies: [
                "MobilityModel", "MobilityWire", "CareReports", "RuleEngine", "RuleLanguage", "Ingest", "Simulator", "StateStore", "PostgresStore",
                "MQTTTransport", "HTTPEndpoint"
            ],
            swiftSettings: strict),
        .executableTarget(
            name: "mobilityctl",
            dependencies: [
                "MobilityModel", "MobilityWire", "MQTTTransport", "RuleLanguage", "RuleEngine", "Ingest", "RuleTesting", "CareReports", "StateStore",
                "MobilityFHIR"
            ],
            swiftSettings: strict),

        // Tests mirror the targets.
        .target(
            name: "TestSupport", dependencies: ["MobilityModel", "MQTTTransport", "HTTPEndpoint", "CSQLite"], path: "Tests/TestSupport", swiftSettings: strict),
        .testTarget(name: "MobilityModelTests", dependencies: ["MobilityModel", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "MobilityWireTests", dependencies: ["MobilityWire", "MobilityModel", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "RuleLanguageTests", dependencies: ["RuleLanguage", "MobilityModel", "TestSupport"],
            exclude: ["Golden", "FuzzCrashes"], swiftSettings: strict),
        .target(
            name: "EngineTestSupport", dependencies: ["MobilityModel", "RuleLanguage", "RuleEngine"], path: "Tests/EngineTestSupport", swiftSettings: strict),
        .testTarget(
            name: "RuleEngineTests", dependencies: ["RuleEngine", "RuleLanguage", "MobilityModel", "EngineTestSupport", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "IngestTests", dependencies: ["Ingest", "RuleEngine", "RuleLanguage", "MobilityWire", "MobilityModel", "EngineTestSupport", "TestSupport"],
            swiftSettings: strict),
        .testTarget(name: "MQTTTransportTests", dependencies: ["CMosquitto", "MQTTTransport", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "MobilityDaemonTests",
            dependencies: [
                "MobilityDaemon", "MobilityModel", "RuleEngine", "RuleLanguage", "Ingest", "Simulator", "StateStore", "PostgresStore", "CareReports",
                "TestSupport", "CSQLite", "JetStreamAccess"
            ],
            swiftSettings: strict),
        .testTarget(
            name: "SimulatorTests", dependencies: ["Simulator", "MobilityWire", "RuleEngine", "RuleLanguage", "Ingest", "CZlib", "TestSupport"],
            exclude: ["Fixtures"], swiftSettings: strict),
        .testTarget(
            name: "StateStoreTests",
            dependencies: ["StateStore", "CareReports", "CSQLite", "CZlib", "RuleEngine", "RuleLanguage", "MobilityModel", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "PostgresStoreTests",
            dependencies: ["PostgresStore", "StateStore", "CareReports", "RuleEngine", "RuleLanguage", "MobilityModel", "TestSupport", "CSQLite"],
            swiftSettings: strict),
        .testTarget(
            name: "RuleTestingTests", dependencies: ["RuleTesting", "RuleEngine", "RuleLanguage", "MobilityModel", "TestSupport"], exclude: ["Golden"],
            swiftSettings: strict),
        .testTarget(
            name: "mobilityctlTests",
            dependencies: ["MobilityModel", "StateStore", "CareReports", "Ingest", "RuleEngine", "RuleLanguage", "Simulator", "TestSupport"],
            swiftSettings: strict),
        .testTarget(name: "mobility-benchTests", dependencies: ["mobility-bench", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "MobilityFHIRTests", dependencies: ["MobilityFHIR", "MobilityModel", "RuleLanguage", "TestSupport"], exclude: ["Golden"],
            swiftSettings: strict),
        .testTarget(name: "PackageLayoutTests", dependencies: ["TestSupport"], swiftSettings: strict),
        .testTarget(name: "HTTPEndpointTests", dependencies: ["HTTPEndpoint", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "JetStreamAccessTests", dependencies: ["JetStreamAccess", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "CareReportsTests",
            dependencies: ["CareReports", "MobilityModel", "RuleEngine", "RuleLanguage", "Ingest", "Simulator", "CLibXML2", "CZlib", "TestSupport"],
            swiftSettings: strict)
    ],
    cxxLanguageStandard: .cxx17
)
