import Foundation
import MobilityDaemon

/// `mobilityd`: parse the configuration and run the daemon. Exit codes: 0 clean stop, 1 failure
/// (invalid rules, broker refusal), 2 usage or configuration error.
let configuration: DaemonConfiguration
do {
    configuration = try DaemonConfiguration.load(
        arguments: Array(CommandLine.arguments.dropFirst()),
        environment: ProcessInfo.processInfo.environment)
} catch {
    FileHandle.standardError.write(Data("mobilityd: \(error)\n\nrun 'mobilityd --help' for the options\n".utf8))
    exit(2)
}
if configuration.help {
    print(DaemonConfiguration.usage, terminator: "")
    exit(0)
}
if configuration.partitioning != nil, !configuration.checkConfig {
    exit(PartitionSupervisor(configuration: configuration).run())  // leases on a share of the partitions
}
exit(Daemon(configuration: configuration).run())
