/// Whether the state store and the ingest journal vouch for each other when the daemon starts,
/// and what the start may do when they do not. Pure: the daemon reads both, asks, and logs.
///
/// The journal holds every acknowledged message not yet released; a segment is released only
/// once the store has committed every record in it, and the store records how far that is
/// (``committedThroughKey``). So at start:
/// - the store must have committed at least up to the journal's first record (else records were
///   released into a store that no longer has them: an emptied, replaced or older store);
/// - the journal must reach every record the store applied and every record it recorded as
///   appended (``IngestJournal/recordHighWater()``), and be readable (else acknowledged records
///   that were not committed may be gone);
/// - new records are numbered above both, so none is skipped as "already committed".
///
/// A loss is refused (``Verdict/refuse(exitCode:findings:)``) unless the operator asked to go on
/// with what is left: `recoverJournal` for journal damage, `rebuildStore` for the store.
package struct DurableStateCheck: Sendable {
    /// The metadata key under which the store records that every journal record up to a
    /// sequence number is committed.
    package static let committedThroughKey = "journal_committed_through"
    /// The metadata key of the journal damage an operator accepted (``JournalDamage/key``, one a line).
    package static let acceptedDamageKey = "journal_damage_accepted"
    /// The exit code of a refusal for journal damage (EX_DATAERR).
    package static let journalDamagedExitCode: Int32 = 65
    /// The exit code of a refusal for a store missing, empty or older than the journal (EX_NOINPUT).
    package static let storeBehindExitCode: Int32 = 66

    /// What the store says about the journal.
    package struct Store: Sendable {
        /// Neither a user nor a daemon start recorded: a new, emptied or replaced store.
        package var isEmpty: Bool
        /// Every journal record up to this one is committed (0: never recorded).
        package var committedThrough: UInt64
        /// The highest journal record any user's state applied (0: none).
        package var highestApplied: UInt64
        /// The keys of the journal damage an operator accepted at an earlier start.
        package var acceptedDamage: Set<String>

        /// Creates the store's side of the check.
        package init(isEmpty: Bool, committedThrough: UInt64, highestApplied: UInt64, acceptedDamage: Set<String> = []) {
            self.isEmpty = isEmpty
            self.committedThrough = committedThrough
            self.highestApplied = highestApplied
            self.acceptedDamage = acceptedDamage
        }
    }

    /// One disagreement or damage, and what it cost.
    package struct Finding: Sendable, Equatable, CustomStringConvertible {
        /// Which side is short: the journal (`--recover-journal` goes on) or the store (`--rebuild-store`).
        package enum Side: String, Sendable { case journal, store }
        /// Which side is short.
        package var side: Side
        /// What was found, for the log.
        package var description: String
        /// Acknowledged records lost: exactly, or at most this many (``lostIsExact``); nil when
        /// it cannot be known.
        package var lost: UInt64?
        /// Whether ``lost`` is exact.
        package var lostIsExact: Bool
        /// The name under which an accepted journal finding is remembered (nil for the store's).
        package var key: String?
        /// Whether an operator accepted it at an earlier start.
        package var acceptedBefore: Bool
        /// Whether it cost nothing: journal damage to records the store had committed (a store
        /// finding always costs what only the store kept).
        package var costsNothing: Bool { side == .journal && lost == 0 && lostIsExact }

        package init(side: Side, description: String, lost: UInt64?, lostIsExact: Bool, key: String? = nil, acceptedBefore: Bool = false) {
            self.side = side
            self.description = description
            self.lost = lost
            self.lostIsExact = lostIsExact
            self.key = key
            self.acceptedBefore = acceptedBefore
        }
    }

    /// What the start does.
    package enum Verdict: Sendable, Equatable {
        /// Start: number new records above `numberingAbove`; `findings` were accepted (now or
        /// before) and are reported; the store records `acceptDamage` as accepted and, when
        /// set, `committedThrough`.
        case start(numberingAbove: UInt64, findings: [Finding], acceptDamage: Set<String>, committedThrough: UInt64?)
        /// Refuse to start with `exitCode`: `findings` hold what was not accepted.
        case refuse(exitCode: Int32, findings: [Finding])
    }

    /// The journal as read at start.
    package var journal: JournalInspection
    /// The store's side.
    package var store: Store

    /// Creates the check of a journal against a store.
    package init(journal: JournalInspection, store: Store) {
        self.journal = journal
        self.store = store
    }

    /// Everything the journal and the store disagree about or cannot read.
    package var findings: [Finding] {
        var out: [Finding] = []
        let committed = max(store.committedThrough, store.highestApplied)
        let last = journal.lastSeq
        if store.isEmpty && !journal.isEmpty {
            let first = journal.firstSeq ?? 1
            let storeOnly = "what only the store kept (acknowledgements, silences, the audit trail, dead letters, weekly reports) is gone"
            let what =
                first > 1
                ? "records 1–\(first - 1) were released from the journal once committed, to a store that no longer has them (\(first - 1) lost, and the state they made: baselines, alert states, history), and \(storeOnly)"
                : "the state is rebuilt from them, but \(storeOnly)"
            out.append(
                Finding(
                    side: .store, description: "the state store is empty or new, but the journal holds records \(first)–\(last) of earlier runs: \(what)",
                    lost: first - 1, lostIsExact: true, key: nil, acceptedBefore: false))
        } else if let first = journal.firstSeq, !journal.isEmpty, first > committed + 1 {
            out.append(
                Finding(
                    side: .store,
                    description:
                        "the journal starts at record \(first) (the records before it were released once committed), but the state store has committed only through record \(committed): records \(committed + 1)–\(first - 1) (\(first - 1 - committed)) are in neither; the store is older than the journal (restored from a backup, replaced) or journal segments were deleted",
                    lost: first - 1 - committed, lostIsExact: true, key: nil, acceptedBefore: false))
        }
        for d in journal.damage {
            // Records at or below the store's committed position made their state already: the
            // damage costs only those above it.
            let r = store.committedThrough
            var lost = d.lost
            var description = "ingest journal damaged: \(d)"
            if d.lost > 0, r > d.after {
                let committed = min(r - d.after, d.lost)
                lost = d.lost - committed
                description +=
                    lost == 0
                    ? " (the store had committed every one of them: nothing lost)"
                    : " (the store had committed records up to \(r): \(d.lostIsExact ? "" : "at most ")\(lost) of them lost)"
            }
            out.append(
                Finding(
                    side: .journal, description: description, lost: lost, lostIsExact: d.lostIsExact || lost == 0, key: d.key,
                    acceptedBefore: store.acceptedDamage.contains(d.key)))
        }
        // The journal's end must reach both what the store applied and what the journal itself
        // recorded as appended (its high-water mark, a few milliseconds behind the appends).
        let reached = max(store.highestApplied, journal.highWater ?? 0)
        if journal.isEmpty && (committed > 0 || reached > 0) {
            let key = "empty:\(max(committed, reached))"
            let known = reached > store.committedThrough ? reached - store.committedThrough : 0
            out.append(
                Finding(
                    side: .journal,
                    description:
                        "the ingest journal is empty, but the state store has committed records up to \(committed)"
                        + (journal.highWater.map { " and the journal had records up to \($0)" } ?? "")
                        + ": the journal was deleted; messages acknowledged after the store's last commit are lost"
                        + (journal.highWater != nil ? " (at most \(known), and any in the last milliseconds)" : " (how many cannot be known)"),
                    lost: journal.highWater != nil ? known : nil, lostIsExact: false, key: key, acceptedBefore: store.acceptedDamage.contains(key)))
        } else if !journal.isEmpty && last < reached {
            let key = "ends:\(last)-\(reached)"
            let from = max(last, store.committedThrough)
            let cost =
                from >= reached
                ? "the store had committed every one of them: nothing lost"
                : "of records \(from + 1)–\(reached), those not yet committed are lost"
            let whose =
                (journal.highWater ?? 0) >= store.highestApplied
                ? "its high-water mark says it held records up to \(reached)" : "the state store applied records up to \(reached)"
            out.append(
                Finding(
                    side: .journal,
                    description: "the ingest journal ends at record \(last), but \(whose): the journal lost its end (cut, or a segment deleted); \(cost)",
                    lost: reached - min(from, reached), lostIsExact: from >= reached, key: key, acceptedBefore: store.acceptedDamage.contains(key)))
        }
        return out
    }

    /// Whether a finding stops the start unless the operator's flag covers it: every store
    /// finding (what only the store kept is gone), and journal findings that may have cost a
    /// record and were not accepted at an earlier start.
    static func refuses(_ f: Finding) -> Bool {
        f.side == .store || (!f.acceptedBefore && !f.costsNothing)
    }

    /// The verdict for this start: refused while a finding that ``refuses(_:)`` is not covered
    /// by the operator's flag (any of the store's: exit 66, else 65).
    package func verdict(recoverJournal: Bool, rebuildStore: Bool) -> Verdict {
        let all = findings
        let refused = all.filter { DurableStateCheck.refuses($0) && !($0.side == .store ? rebuildStore : recoverJournal) }
        if !refused.isEmpty {
            let code = refused.contains { $0.side == .store } ? DurableStateCheck.storeBehindExitCode : DurableStateCheck.journalDamagedExitCode
            return .refuse(exitCode: code, findings: refused)
        }
        let committed = max(store.committedThrough, store.highestApplied)
        let numbering = max(journal.lastSeq, committed, journal.highWater ?? 0)
        var accept = Set(all.compactMap(\.key))
        // New records start a segment at `numbering + 1`: when that leaves numbers out after the
        // journal's end (records the store applied, or committed, that the journal no longer
        // has), the next start finds them missing between the two segments, which this start
        // has already reported.
        if !journal.isEmpty, numbering > journal.lastSeq {
            accept.insert(JournalDamage(segment: nil, bytes: nil, after: journal.lastSeq, before: numbering + 1).key)
        }
        // The store now vouches for the records the journal no longer has (their loss accepted):
        // those before its first segment, or every one numbered so far when it is empty.
        var gone: UInt64 = 0
        if all.contains(where: { $0.side == .store }), let first = journal.firstSeq { gone = first - 1 }
        if journal.isEmpty, !all.isEmpty { gone = numbering }
        let through = gone > store.committedThrough ? gone : nil
        return .start(numberingAbove: numbering, findings: all, acceptDamage: accept, committedThrough: through)
    }
}
