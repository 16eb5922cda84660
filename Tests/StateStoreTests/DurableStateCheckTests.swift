import Foundation
import StateStore
import TestSupport
import Testing

/// The start-up verdict on a journal read from real segment files against what a store says.
@Suite struct DurableStateCheckTests {
    /// A journal of records 1...`count` in segments of about `segmentBytes`, of which the ones
    /// wholly at or below `released` are deleted (as the daemon releases them once committed).
    private func journal(_ count: Int, segmentBytes: Int = 1500, released: UInt64 = 0) throws -> (dir: String, found: JournalInspection) {
        let dir = TemporaryPath.make("mw-journal")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if count > 0 {
            let j = try IngestJournal(directory: dir, segmentBytes: segmentBytes)
            for i in 1...count { _ = try j.append(topic: "mobility/v1/users/u\(i % 3)/samples", payload: Array("sample \(i)".utf8)) }
            j.release(through: released)
        }
        return (dir, IngestJournal.inspect(dir))
    }

    private func store(empty: Bool = false, committed: UInt64 = 0, applied: UInt64, accepted: Set<String> = []) -> DurableStateCheck.Store {
        DurableStateCheck.Store(isEmpty: empty, committedThrough: committed, highestApplied: applied, acceptedDamage: accepted)
    }

    @Test func aWholeJournalAndItsStoreStartWithoutAWord() throws {
        let (dir, found) = try journal(100, released: 60)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(found.firstSeq! > 1)
        let check = DurableStateCheck(journal: found, store: store(committed: 60, applied: 97))
        #expect(check.findings.isEmpty)
        #expect(check.verdict(recoverJournal: false, rebuildStore: false) == .start(numberingAbove: 100, findings: [], acceptDamage: [], committedThrough: nil))
    }

    /// A zero-length or new store beside a journal that was released from: refused (66), and
    /// with --rebuild-store the start says the released records are lost and the store then
    /// vouches for them, so the next start goes ahead.
    @Test func anEmptyStoreBesideAReleasedJournalIsRefused() throws {
        let (dir, found) = try journal(100, released: 60)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try #require(found.firstSeq)
        let check = DurableStateCheck(journal: found, store: store(empty: true, applied: 0))
        guard case .refuse(let code, let why) = check.verdict(recoverJournal: true, rebuildStore: false) else {
            Issue.record("an empty store started")
            return
        }
        #expect(code == 66 && why.count == 1 && why[0].side == .store && why[0].lost == first - 1 && why[0].lostIsExact)
        #expect(why[0].description.contains("records 1–\(first - 1) were released"), "\(why[0])")
        guard case .start(let numbering, let findings, _, let through) = check.verdict(recoverJournal: false, rebuildStore: true) else {
            Issue.record("--rebuild-store did not start")
            return
        }
        #expect(numbering == 100 && findings.count == 1 && through == first - 1)
        // The next start: the store has a user and the position it now vouches for.
        #expect(DurableStateCheck(journal: found, store: store(committed: first - 1, applied: 100)).findings.isEmpty)
    }

    /// A store with nothing released beside it is still refused when empty: what only the store
    /// kept (acknowledgements, silences, the audit trail) cannot come back from the journal.
    @Test func anEmptyStoreBesideAWholeJournalIsRefusedToo() throws {
        let (dir, found) = try journal(40)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let v = DurableStateCheck(journal: found, store: store(empty: true, applied: 0)).verdict(recoverJournal: false, rebuildStore: false)
        guard case .refuse(66, let why) = v else {
            Issue.record("\(v)")
            return
        }
        #expect(why.first?.lost == 0 && why.first?.description.contains("acknowledgements, silences, the audit trail") == true)
        // A new store with no journal at all is a first start.
        let (none, nothing) = try journal(0)
        defer { try? FileManager.default.removeItem(atPath: none) }
        #expect(DurableStateCheck(journal: nothing, store: store(empty: true, applied: 0)).findings.isEmpty)
    }

    /// A store restored from a backup older than what the journal released.
    @Test func aStoreOlderThanTheJournalIsRefused() throws {
        let (dir, found) = try journal(100, released: 60)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try #require(found.firstSeq)
        let v = DurableStateCheck(journal: found, store: store(committed: 20, applied: 25)).verdict(recoverJournal: false, rebuildStore: false)
        guard case .refuse(66, let why) = v else {
            Issue.record("\(v)")
            return
        }
        #expect(why.first?.lost == first - 26 && why.first?.description.contains("records 26–\(first - 1)") == true)
    }

    /// Damage in the middle: refused (65) without the flag; with it, the start accepts the damage
    /// by key, and a later start without the flag goes ahead on the same damage, still reporting it.
    @Test func journalDamageNeedsTheFlagOnce() throws {
        let (dir, _) = try journal(100, segmentBytes: 64 << 20)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/journal-0000000000000001.log"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        for k in 0..<16 { bytes[bytes.count / 2 + k] ^= 0xFF }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let found = IngestJournal.inspect(dir)
        let key = try #require(found.damage.first?.key)
        let check = DurableStateCheck(journal: found, store: store(committed: 0, applied: 100))
        guard case .refuse(65, let why) = check.verdict(recoverJournal: false, rebuildStore: true) else {
            Issue.record("damage started without --recover-journal")
            return
        }
        #expect(why.map(\.key) == [key] && why[0].lost! >= 1)
        guard case .start(100, let findings, let accept, nil) = check.verdict(recoverJournal: true, rebuildStore: false) else {
            Issue.record("--recover-journal did not start")
            return
        }
        #expect(findings.count == 1 && accept == [key])
        let later = DurableStateCheck(journal: found, store: store(committed: 0, applied: 100, accepted: accept))
        guard case .start(_, let again, _, _) = later.verdict(recoverJournal: false, rebuildStore: false) else {
            Issue.record("accepted damage refused again")
            return
        }
        #expect(again.count == 1 && again[0].acceptedBefore)
    }

    /// Damage to records the store had committed (after a clean stop, or in an old segment) costs
    /// nothing: the start goes ahead and says so; damage above the committed position counts only
    /// the records above it.
    @Test func damageToCommittedRecordsIsReportedAndCostsNothing() throws {
        let (dir, _) = try journal(100, segmentBytes: 64 << 20)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/journal-0000000000000001.log"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        for k in 0..<16 { bytes[bytes.count / 2 + k] ^= 0xFF }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let found = IngestJournal.inspect(dir)
        let d = try #require(found.damage.first)
        let clean = DurableStateCheck(journal: found, store: store(committed: 100, applied: 100))
        guard case .start(100, let findings, let accept, nil) = clean.verdict(recoverJournal: false, rebuildStore: false) else {
            Issue.record("refused damage that cost nothing")
            return
        }
        #expect(findings.count == 1 && findings[0].lost == 0 && findings[0].description.hasSuffix("(the store had committed every one of them: nothing lost)"))
        #expect(accept == [d.key])
        // Committed up to the middle of the damaged records: only those above count.
        let partly = DurableStateCheck(journal: found, store: store(committed: d.after + 1, applied: 100)).findings
        #expect(partly.first?.lost == d.lost - 1)
    }

    /// The journal cut short below what the store applied (a cut that a torn tail would hide):
    /// refused; with the flag, new records are numbered above the store's position, and the
    /// numbers left out are accepted for the next start.
    @Test func aJournalEndingBelowTheStoreIsDamage() throws {
        let (dir, found) = try journal(80, segmentBytes: 64 << 20)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let check = DurableStateCheck(journal: found, store: store(committed: 50, applied: 120))
        guard case .refuse(65, let why) = check.verdict(recoverJournal: false, rebuildStore: false) else {
            Issue.record("started")
            return
        }
        #expect(why.first?.lost == 40 && why.first?.lostIsExact == false)
        guard case .start(120, _, let accept, _) = check.verdict(recoverJournal: true, rebuildStore: false) else {
            Issue.record("--recover-journal did not start")
            return
        }
        let j = try IngestJournal(directory: dir, opening: found, numberingAbove: 120)
        #expect(try j.append(topic: "mobility/v1/users/u1/samples", payload: [1]) == 121)
        let next = IngestJournal.inspect(dir)
        #expect(Set(next.damage.map(\.key)).isSubset(of: accept) && next.damage.count == 1)
        let later = DurableStateCheck(journal: next, store: store(committed: 121, applied: 121, accepted: accept))
        guard case .start(121, let known, _, _) = later.verdict(recoverJournal: false, rebuildStore: false) else {
            Issue.record("the accepted numbering gap was refused")
            return
        }
        #expect(known.count == 1 && known[0].acceptedBefore)
    }

    /// The newest segment cut (or deleted) past everything the store applied: only the journal's
    /// own high-water mark says records are gone, and the start is refused on it.
    @Test func aCutBelowTheHighWaterMarkIsDamageEvenPastTheStore() throws {
        let dir = TemporaryPath.make("mw-journal")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var ends: [Int] = []
        do {
            let j = try IngestJournal(directory: dir)
            for i in 1...100 {
                _ = try j.append(topic: "mobility/v1/users/u/samples", payload: Array("sample \(i)".utf8))
                ends.append(Int((try FileManager.default.attributesOfItem(atPath: dir + "/journal-0000000000000001.log")[.size] as? Int) ?? 0))
            }
            #expect(j.recordHighWater())
        }
        #expect(truncate(dir + "/journal-0000000000000001.log", off_t(ends[59])) == 0)  // at a record's end: no torn tail
        let found = IngestJournal.inspect(dir)
        #expect(found.damage.isEmpty && found.tornTail == nil && found.lastSeq == 60 && found.highWater == 100)
        let check = DurableStateCheck(journal: found, store: store(committed: 20, applied: 40))
        guard case .refuse(65, let why) = check.verdict(recoverJournal: false, rebuildStore: false) else {
            Issue.record("a cut journal started")
            return
        }
        #expect(why.first?.lost == 40 && why.first?.description.contains("high-water mark says it held records up to 100") == true)
        guard case .start(100, _, _, _) = check.verdict(recoverJournal: true, rebuildStore: false) else {
            Issue.record("--recover-journal did not number above the mark")
            return
        }
        // The segment deleted altogether: the mark still says what was there.
        try FileManager.default.removeItem(atPath: dir + "/journal-0000000000000001.log")
        let none = IngestJournal.inspect(dir)
        let deleted = DurableStateCheck(journal: none, store: store(committed: 20, applied: 40)).findings
        #expect(deleted.count == 1 && deleted[0].lost == 80)
    }

    /// A journal cut after everything in it was committed loses nothing: the start goes ahead and
    /// numbers new records above the committed position, so none is skipped as already applied.
    @Test func numbersNeverGoBelowWhatTheStoreCommitted() throws {
        let (dir, found) = try journal(80, segmentBytes: 64 << 20)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let v = DurableStateCheck(journal: found, store: store(committed: 150, applied: 80)).verdict(recoverJournal: false, rebuildStore: false)
        guard case .start(150, let findings, let accept, nil) = v else {
            Issue.record("\(v)")
            return
        }
        #expect(findings.isEmpty && accept == ["missing:81-150"])
    }

    /// A deleted journal beside a store that committed records: what came after the last commit
    /// cannot be known, so the start is refused until the operator says go on.
    @Test func aDeletedJournalIsDamage() throws {
        let (dir, found) = try journal(0)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let check = DurableStateCheck(journal: found, store: store(committed: 300, applied: 310))
        guard case .refuse(65, let why) = check.verdict(recoverJournal: false, rebuildStore: false) else {
            Issue.record("started")
            return
        }
        #expect(why.first?.lost == nil)
        guard case .start(310, _, let accept, _) = check.verdict(recoverJournal: true, rebuildStore: false) else {
            Issue.record("--recover-journal did not start")
            return
        }
        #expect(accept == ["empty:310"])
    }
}
