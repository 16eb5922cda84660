import PostgresStore

/// The start's wait for a PostgreSQL state store that does not answer yet (at boot the database
/// may come up after mobilityd; a failover may be under way): the server is asked again 1 s after
/// the first try and twice as long after each (at most 15 s), each new reason logged once, until
/// it answers or the run is asked to end. Exiting instead would leave the instance down: the
/// shipped unit does not restart a start that failed with 1.
struct StoreReachability {
    /// Asks the server once: nil when it answers, else why not.
    var probe: (String) -> PostgresError?
    /// Waits this many seconds or until the run is asked to end (true then).
    var pause: (Termination, Double) -> Bool = { $0.wait(seconds: $1) }
    let log: Logger

    init(
        log: Logger,
        probe: @escaping (String) -> PostgresError? = { url in
            do throws(PostgresError) {
                try PostgresStore.probe(url: url)
                return nil
            } catch { return error }
        }
    ) {
        self.log = log
        self.probe = probe
    }

    /// Waits until the store at `url` answers: true then, or at once for a refused URL (opening
    /// the store then says why, and the start fails); false when `termination` is requested first.
    func waitUntilReachable(_ url: String, termination: Termination) -> Bool {
        var delay = 1.0
        var reported: Set<String> = []
        while !termination.isRequested {
            guard let error = probe(url), error.code == .connection else {
                if !reported.isEmpty { log.info("the PostgreSQL state store answers") }
                return true
            }
            if reported.insert(error.message).inserted {
                log.warn("cannot reach the PostgreSQL state store yet; trying again until it answers", ["error": error.description])
            }
            if pause(termination, delay) { break }
            delay = min(delay * 2, 15)
        }
        log.info("stopped while waiting for the state store", ["exit_code": "0"])
        return false
    }
}
