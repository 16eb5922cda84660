import Glibc

/// The process's open-descriptor limit. systemd and most shells start services with a soft limit
/// of 1 024 (for the sake of select(2), which mobilityd does not use) under a much higher hard
/// limit; the daemon raises its soft limit and keeps HTTP clients to a share of it, so that idle
/// connections can never take the descriptors the journal, SQLite and MQTT need.
enum DescriptorLimit {
    /// Descriptors kept for everything but HTTP clients (journal segments, SQLite, MQTT, logs).
    static let reserved = 512

    /// Raises the soft limit to the hard limit, at most `ceiling`; returns the soft limit in force.
    @discardableResult
    static func raise(upTo ceiling: Int = 65_536) -> Int {
        var rl = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &rl) == 0 else { return 1024 }
        let target = min(rl.rlim_max, rlim_t(ceiling))
        if rl.rlim_cur < target {
            var raised = rl
            raised.rlim_cur = target
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { rl = raised }
        }
        return rl.rlim_cur >= rlim_t(Int.max) ? ceiling : Int(rl.rlim_cur)
    }

    /// The HTTP connection limit that leaves ``reserved`` descriptors of `limit` to the rest.
    static func httpConnections(limit: Int, wanted: Int) -> Int { max(16, min(wanted, limit - reserved)) }
}
