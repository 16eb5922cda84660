import Foundation
import RuleEngine
import RuleLanguage
import StateStore

extension Daemon {
    /// The durable state a run starts from.
    struct RestoredState {
        /// The state store.
        let store: any StateBackend
        /// Every user's state (prepared for `program`) and the outputs waiting for the broker.
        let users: [StoredUser<PreparedUser>], outbox: [StateStore.OutboxItem]
        /// The rules the state was made with (a rule set changed across a restart is then reloaded).
        let program: Program
        /// The ingest journal, opened for appending.
        let journal: IngestJournal
        /// What the store and the journal disagreed about or could not read, accepted by the
        /// operator now or at an earlier start (empty when both are whole).
        let findings: [DurableStateCheck.Finding]
        /// The journal position the store records as committed.
        let committedThrough: UInt64
    }

    /// Opens the store and reads it, checks it against the journal (``DurableStateCheck``) and
    /// opens the journal: the state a run starts from, or the exit code of a refusal (each
    /// reason logged). With `--rebuild-store` an SQLite store that cannot be opened or read is
    /// moved aside and a new one rebuilt from the journal.
    func restoreState(current program: Program) -> Restore {
        let opened: OpenedStore
        switch openAndRead(current: program) {
        case .success(let o): opened = o
        case .failure(let f): return f.restore
        }
        let directory = config.state + "/journal"
        let found = IngestJournal.inspect(directory)
        var vouched = Vouched(findings: [], numbering: 0, committedThrough: 0)
        // Partitioned input is not journalled (each partition session acknowledges after the commit).
        if claimed == nil {
            switch check(found, against: opened) {
            case .started(let v): vouched = v
            case .refused(let code): return .refused(code)
            case .unreadable(let f): return f.restore
            }
        }
        let findings = vouched.findings, numbering = vouched.numbering, committedThrough = vouched.committedThrough
        let journal: IngestJournal
        do {
            journal = try IngestJournal(directory: directory, segmentBytes: config.journalSegmentBytes, opening: found, numberingAbove: numbering)
        } catch {
            log.error("cannot open the ingest journal", ["journal": directory, "error": "\(error)"])
            return .refused(1)
        }
        if let torn = found.tornTail {
            log.warn(
                "the ingest journal ended in a partial record, a write cut short by a crash (never acknowledged); cut",
                ["segment": (torn.path as NSString).lastPathComponent, "offset": String(torn.offset), "bytes": String(torn.bytes)])
        }
        if numbering > found.lastSeq {
            log.info(
                "new journal records are numbered above what the store committed", ["journal_last": String(found.lastSeq), "next": String(numbering + 1)])
        }
        return .ready(
            RestoredState(
                store: opened.store, users: opened.users,
                // Another instance's partitions' outputs are its runs' to publish (each run would otherwise publish everyone's).
                outbox: opened.outbox.filter { CommandScope(partitions: claimed?.partitions).publishes(output: $0.topic, root: layout.root) },
                program: opened.program, journal: journal, findings: findings,
                committedThrough: committedThrough))
    }

    /// The store, opened and read, and the rules its state was made with.
    private struct OpenedStore {
        let store: any StateBackend
        /// Where an unreadable store was moved (`--rebuild-store`), nil when it was not.
        let aside: String?
        let program: Program
        let users: [StoredUser<PreparedUser>], outbox: [StateStore.OutboxItem]
    }

    /// What the journal check lets the start go on with.
    private struct Vouched {
        /// What was found damaged or missing, accepted.
        var findings: [DurableStateCheck.Finding]
        /// New journal records are numbered above this.
        var numbering: UInt64
        /// The journal position the store records as committed.
        var committedThrough: UInt64
    }

    /// The journal check's answer.
    private enum Checked {
        case started(Vouched)
        case refused(Int32)
        /// The store's facts could not be read.
        case unreadable(StoreStartFailure)
    }

    /// Opens the store and reads it into the rules its state was made with; with `--rebuild-store`
    /// an SQLite store that cannot be opened or read is moved aside and a new one made. A failure
    /// is logged, and carries the store's error when there is one.
    private func openAndRead(current program: Program) -> Result<OpenedStore, StoreStartFailure> {
        var aside: String?
        var store: any StateBackend
        do { store = try openStore() } catch {
            guard config.rebuildStore, config.store == .sqlite else {
                log.error("cannot open the state store", ["state": config.state, "error": "\(error)", "remedy": Daemon.rebuildRemedy])
                return .failure(StoreStartFailure(error))
            }
            guard let moved = moveStoreAside(error) else { return .failure(StoreStartFailure(nil)) }
            aside = moved
            do { store = try openStore() } catch {
                log.error("cannot open the state store", ["state": config.state, "error": "\(error)"])
                return .failure(StoreStartFailure(error))
            }
        }
        var (restoreProgram, loaded) = load(store, current: program)
        if case .failure(let error) = loaded {
            guard config.rebuildStore, config.store == .sqlite, aside == nil, let moved = moveStoreAside(error) else {
                log.error("cannot read the state store", ["state": config.state, "error": "\(error)", "remedy": Daemon.rebuildRemedy])
                return .failure(StoreStartFailure(error))
            }
            aside = moved
            do { store = try openStore() } catch {
                log.error("cannot open the state store", ["state": config.state, "error": "\(error)"])
                return .failure(StoreStartFailure(error))
            }
            (restoreProgram, loaded) = load(store, current: program)
        }
        switch loaded {
        case .success(let restored):
            return .success(OpenedStore(store: store, aside: aside, program: restoreProgram, users: restored.users, outbox: restored.outbox))
        case .failure(let error):
            log.error("cannot read the state store", ["state": config.state, "error": "\(error)"])
            return .failure(StoreStartFailure(error))
        }
    }

    /// Checks the store against the journal (``DurableStateCheck``): a start refused with its
    /// exit code, or what it goes on with; the findings accepted are logged and recorded.
    private func check(_ found: JournalInspection, against opened: OpenedStore) -> Checked {
        let facts: DurableStateCheck.Store
        do {
            let started = try opened.store.meta("rules_identity") != nil
            facts = DurableStateCheck.Store(
                isEmpty: opened.users.isEmpty && opened.outbox.isEmpty && !started,
                committedThrough: UInt64(try opened.store.meta(DurableStateCheck.committedThroughKey) ?? "") ?? 0,
                highestApplied: opened.users.lazy.map(\.appliedSeq).max() ?? 0,
                acceptedDamage: Set((try opened.store.meta(DurableStateCheck.acceptedDamageKey) ?? "").split(separator: "\n").map(String.init)))
        } catch {
            log.error("cannot read the state store", ["state": config.state, "error": "\(error)"])
            return .unreadable(StoreStartFailure(error))
        }
        var committedThrough = facts.committedThrough
        let check = DurableStateCheck(journal: found, store: facts)
        switch check.verdict(recoverJournal: config.recoverJournal, rebuildStore: config.rebuildStore) {
        case .refuse(let code, let refused):
            for f in refused { log.log(.error, "refusing to start: " + f.description, pairs: fields(f)) }
            let flags = Set(refused.map { $0.side == .store ? "--rebuild-store" : "--recover-journal" }).sorted().joined(separator: " ")
            log.error(
                "refusing to start: the state store and the ingest journal do not vouch for each other; nothing was deleted or cut",
                [
                    "exit_code": String(code), "state": config.state,
                    "remedy":
                        "keep a copy of the state directory, then start once with \(flags) to go on with what is intact; the log then says what was lost (docs/operations.md, Damaged state)"
                ])
            return .refused(code)
        case .start(let above, let all, let accept, let through):
            var findings = all
            if let aside = opened.aside {
                findings.insert(
                    DurableStateCheck.Finding(
                        side: .store, description: "the state store could not be opened or read; it was moved to \(aside) and rebuilt from the journal",
                        lost: nil, lostIsExact: false, key: nil, acceptedBefore: false), at: 0)
            }
            for f in findings {
                let what =
                    f.acceptedBefore
                    ? "known damage, accepted at an earlier start: " : f.costsNothing ? "damaged state, nothing lost: " : "recovering with a loss: "
                log.log(f.acceptedBefore ? .warn : .error, what + f.description, pairs: fields(f))
            }
            if !findings.isEmpty {
                log.error(
                    findings.allSatisfy(\.costsNothing) ? "state damaged, nothing lost" : "state recovered with losses",
                    [
                        "records_lost": Daemon.recordsLost(findings),
                        "findings": String(findings.count), "note": "every intact journal record is replayed; /healthz says degraded"
                    ])
            }
            do {
                let joined = accept.sorted().joined(separator: "\n")
                if (try opened.store.meta(DurableStateCheck.acceptedDamageKey)) ?? "" != joined {
                    try opened.store.setMeta(DurableStateCheck.acceptedDamageKey, joined)
                }
                if let through {
                    try opened.store.setMeta(DurableStateCheck.committedThroughKey, String(through))
                    committedThrough = through
                }
            } catch {
                log.error("cannot record the accepted losses in the state store; the next start reports them again", ["error": "\(error)"])
            }
            return .started(Vouched(findings: findings, numbering: above, committedThrough: committedThrough))
        }
    }

    /// The state to run from, or the exit code of a start that was refused.
    enum Restore {
        case ready(RestoredState)
        case refused(Int32)
        /// The store did not answer (``StateStore/isUnavailableStore(_:)``): an outage of a
        /// shared store, not damage; under the partition supervisor the run starts again once it
        /// answers.
        case storeUnavailable
    }

    /// Why a run could not start on its store: the store's error, when there is one (nil: a
    /// failure of ours, such as a store that could not be moved aside).
    struct StoreStartFailure: Error {
        let error: (any Error)?
        init(_ error: (any Error)?) { self.error = error }

        /// The store did not answer: an outage, not damage.
        var isUnavailable: Bool { error.map(isUnavailableStore) ?? false }

        /// The start's answer: the store unavailable, or refused with exit code 1.
        var restore: Restore { isUnavailable ? .storeUnavailable : .refused(1) }
    }

    static let rebuildRemedy =
        "keep a copy of the state directory; with SQLite, --rebuild-store moves the store aside and rebuilds it from the journal, saying what is lost (docs/operations.md, Damaged state)"

    private func fields(_ f: DurableStateCheck.Finding) -> [(String, String)] {
        [("side", f.side.rawValue), ("records_lost", f.lost.map { (f.lostIsExact ? "" : "at most ") + String($0) } ?? "unknown")]
            + (f.key.map { [("key", $0)] } ?? [])
    }

    /// Reads the store into the rules its state was made with: the current ones, or, when the
    /// rules changed across a restart and the stored sources name an alert the current rules
    /// dropped, the stored ones (reloaded from there, so that alert resolves as on SIGHUP); and
    /// reads the acknowledgements, silences and due reports, which the start needs too.
    private func load(
        _ store: any StateBackend, current program: Program
    ) -> (
        Program, Result<(users: [StoredUser<PreparedUser>], outbox: [StateStore.OutboxItem]), any Error>
    ) {
        var restoreProgram = program
        if let previous = try? store.meta("rules_identity"), previous != program.identity {
            log.info(
                "rules changed since the last run; state carries over for rules that kept their name",
                ["previous": previous, "current": program.identity])
            if let text = try? store.meta("rules_sources"), let old = RuleReloader.program(fromStored: text),
                old.alerts.contains(where: { a in !program.alerts.contains { $0.name == a.name } })
            {
                restoreProgram = old
            }
        }
        // The states are made on the load's threads, for the rules they are restored into.
        let preparer = Engine(program: restoreProgram, configuration: config.engine).preparer
        return (
            restoreProgram,
            Result {
                let loaded = try store.load(alertNames: restoreProgram.alerts.map(\.name), prepare: preparer)
                // The other tables the start reads, read once here, so that a store damaged there
                // is refused (or rebuilt) like one whose users cannot be read.
                _ = try store.alertAcknowledgements()
                _ = try store.silences()
                _ = try store.dueReports()
                return loaded
            }
        )
    }

    /// Moves an SQLite store that cannot be opened or read (and its WAL and shared-memory files)
    /// aside, to `state.sqlite.unreadable-<unix time>`; returns that path.
    private func moveStoreAside(_ error: any Error) -> String? {
        let path = config.state + "/state.sqlite"
        let aside = path + ".unreadable-\(Int(Date().timeIntervalSince1970))"
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            guard rename(path + suffix, aside + suffix) == 0 else {
                log.error("cannot move the unreadable state store aside", ["path": path + suffix, "error": String(cString: strerror(errno))])
                return nil
            }
        }
        log.error("the state store cannot be read; moved aside, rebuilding from the journal (--rebuild-store)", ["error": "\(error)", "moved_to": aside])
        return aside
    }
}
