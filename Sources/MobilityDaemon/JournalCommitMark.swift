import StateStore
import Synchronization

/// Releases the ingest journal's segments that every shard has committed, after recording in the
/// state store how far that is (``DurableStateCheck/committedThroughKey``): the store then vouches
/// for what the journal no longer holds, and a store older than the journal is found at start.
/// Called by the housekeeping timer and once more when the shards have stopped.
final class JournalCommitMark: Sendable {
    private let journal: IngestJournal
    private let store: any StateBackend
    private let log: Logger
    /// The position last recorded, and whether the last attempt failed (logged once).
    private let state: Mutex<(recorded: UInt64, failing: Bool)>

    /// - Parameter recorded: the position the store holds already.
    init(journal: IngestJournal, store: any StateBackend, recorded: UInt64, log: Logger) {
        self.journal = journal
        self.store = store
        self.log = log
        self.state = Mutex((recorded, false))
    }

    /// Every journal record up to `seq` is committed: records it (when it moved), then releases
    /// the segments at or below it. A store that refuses the record keeps the segments.
    func advance(to seq: UInt64) {
        let release = state.withLock { st -> Bool in
            guard seq > st.recorded else { return true }
            do {
                try store.setMeta(DurableStateCheck.committedThroughKey, String(seq))
                st.recorded = seq
                if st.failing { log.info("the state store records the journal's committed position again") }
                st.failing = false
                return true
            } catch {
                if !st.failing {
                    log.warn("cannot record the journal's committed position in the state store; journal segments are kept", ["error": "\(error)"])
                }
                st.failing = true
                return false
            }
        }
        if release { journal.release(through: min(seq, state.withLock { $0.recorded })) }
    }
}
