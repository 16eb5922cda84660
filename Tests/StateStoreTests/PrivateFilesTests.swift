import Foundation
import Glibc
import StateStore
import TestSupport
import Testing

/// The state directory, the database with its WAL and shared-memory files and the journal
/// segments are private to the daemon's user whatever the umask, and an older, looser state
/// directory is tightened on open.
@Suite(.serialized) struct PrivateFilesTests {
    static func mode(_ path: String) -> mode_t? {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_mode & 0o7777 : nil
    }

    /// Runs `body` with the process umask set to `mask` (umask is per process: this suite is serialized).
    static func withUmask<T>(_ mask: mode_t, _ body: () throws -> T) rethrows -> T {
        let old = umask(mask)
        defer { umask(old) }
        return try body()
    }

    /// Opens a store and a journal in `dir` and writes to both, so every file exists while they
    /// are open (SQLite removes the WAL and shared-memory files when the last connection closes).
    static func populate(_ dir: String) throws -> (StateStore, IngestJournal) {
        try PrivateFiles.prepareDirectory(dir)
        let store = try StateStore(path: dir + "/state.sqlite", autoCheckpoint: false)
        _ = try store.commit(
            users: [.init(user: "u", appliedSeq: 1, eventNow: nil, state: nil)],
            outbox: [.init(topic: "t", payload: [1], retain: false)])
        let journal = try IngestJournal(directory: dir + "/journal")
        _ = try journal.append(topic: "mobility/v1/users/u/samples", payload: Array("{}".utf8))
        try store.checkpoint()
        return (store, journal)
    }

    static func expectPrivate(_ dir: String) throws {
        #expect(mode(dir) == 0o700, "state directory is \(String(mode(dir) ?? 0, radix: 8))")
        #expect(mode(dir + "/journal") == 0o700)
        let files =
            ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm"].map { dir + "/" + $0 }
            + (try FileManager.default.contentsOfDirectory(atPath: dir + "/journal")).map { dir + "/journal/" + $0 }
        #expect(files.count >= 4)
        for f in files { #expect(mode(f) == 0o600, "\(f) is \(String(mode(f) ?? 0, radix: 8))") }
    }

    @Test(arguments: [mode_t(0o022), mode_t(0o002), mode_t(0o000)])
    func freshStateIsPrivateWhateverTheUmask(mask: mode_t) throws {
        let dir = TemporaryPath.make("mw-private") + "/state"
        defer { try? FileManager.default.removeItem(atPath: (dir as NSString).deletingLastPathComponent) }
        let open = try Self.withUmask(mask) { try Self.populate(dir) }
        try Self.expectPrivate(dir)
        _ = open
    }

    @Test func looseStateOfAnOlderVersionIsTightened() throws {
        let dir = TemporaryPath.make("mw-private")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var open: (StateStore, IngestJournal)? = try Self.populate(dir)
        // As an older mobilityd left it under umask 022.
        chmod(dir, 0o755)
        chmod(dir + "/journal", 0o755)
        for f in try FileManager.default.contentsOfDirectory(atPath: dir + "/journal") { chmod(dir + "/journal/" + f, 0o644) }
        for f in ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm"] { chmod(dir + "/" + f, 0o644) }
        #expect(try PrivateFiles.prepareDirectory(dir) == true)  // reports that it tightened
        #expect(try PrivateFiles.prepareDirectory(dir) == false)
        open = try Self.withUmask(0o022) { try Self.populate(dir) }
        try Self.expectPrivate(dir)
        _ = open  // kept open until here
        open = nil
    }

    @Test func aPathThatIsNotADirectoryIsRefused() throws {
        let file = TemporaryPath.make("mw-private")
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(throws: PrivateFiles.Failure.self) { try PrivateFiles.prepareDirectory(file) }
    }
}
