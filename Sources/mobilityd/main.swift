import Foundation
import MobilityDaemon

/// `mobilityd`: parse the configuration and run the daemon (with `--partitions`, under the supervisor
/// of its partition leases). Exit codes (docs/operations.md, "Exit codes"): 0 stopped by a signal
/// after draining, or `--help` / `--check-config` succeeded; 1 a failure retrying cannot fix (invalid
/// rules, unreadable state, the broker refusing the login or the protocol); 2 usage or configuration
/// error; 65 the ingest journal is damaged or cut short; 66 the state store is missing, empty or
/// older than the journal; 75 the metrics or report listener's address is in use.
// Before any thread exists: SIGTERM, SIGINT and SIGHUP stay pending until the daemon's handlers
// take them, so one sent during start-up is acted on once it has started, never lost.
SignalService.holdAtProcessStart()
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
