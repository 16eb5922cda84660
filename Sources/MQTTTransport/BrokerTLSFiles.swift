/// The TLS files of a broker connection, as `mobilityd`, `mobilityctl` and `mobility-sim` take
/// them (`--ca-file`, `--cert-file`, `--key-file`), checked the same way by each.
package struct BrokerTLSFiles: Sendable, Equatable {
    /// CA certificate (system store when nil).
    package var caFile: String?
    /// Client certificate and key (mutual TLS); both or neither.
    package var certFile: String?, keyFile: String?

    package init(caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil) {
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
    }

    /// What is wrong with the files for `broker`, nil when nothing: a client certificate goes with
    /// its key, and TLS files with an `mqtts://` broker (a plain one would silently not use them).
    package func problem(for broker: BrokerURL) -> String? {
        if (certFile == nil) != (keyFile == nil) { return "--cert-file and --key-file go together" }
        if !broker.tls, caFile != nil || certFile != nil { return "--ca-file and --cert-file need an mqtts:// broker" }
        return nil
    }
}
