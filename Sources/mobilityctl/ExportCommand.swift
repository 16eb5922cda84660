import CareReports
import Foundation
import MobilityModel
import StateStore

/// `mobilityctl export --state DIR [--team T] [--from DAY] [--to DAY] [--format csv] [-o FILE|-]`:
/// the research export of a mobilityd state directory, one CSV row per user-day
/// (``ResearchTable``, docs/research-export.md). The store is opened read-only, so it can be
/// exported while mobilityd runs; each user's rows come from one snapshot of the store.
enum ExportCommand {
    static let usage = """
        usage: mobilityctl export --state DIR [--team TEAM] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--format csv] [-o|--output FILE|-]
          --team: the users whose stored profile names the team (as mobilityd last saved it; its --care-teams file is not read)
        """

    /// Why `--format parquet` is refused (docs/research-export.md).
    static let parquetRefusal = """
        Parquet is not supported: Debian ships no maintained Parquet library (Apache Arrow's libarrow \
        and libparquet are not packaged) and MobilityWatch links Debian's C libraries only; export \
        CSV and convert it, e.g. pandas.read_csv(...).to_parquet(...)
        """

    static func run(_ args: [String]) -> Int32 {
        var state: String?, team: String?, fromText: String?, toText: String?, format = "csv", output = "-"
        var i = 0
        func value() -> String {
            i += 1
            guard i < args.count else { fail("mobilityctl export: \(args[i - 1]) needs a value\n" + usage) }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--state": state = value()
            case "--team": team = value()
            case "--from": fromText = value()
            case "--to": toText = value()
            case "--format": format = value()
            case "-o", "--output": output = value()
            case "-h", "--help":
                print(usage)
                return 0
            default: fail("mobilityctl export: unknown argument \(args[i])\n" + usage)
            }
            i += 1
        }
        guard let state else { fail("mobilityctl export: --state is required (the daemon's --state directory)\n" + usage) }
        switch format {
        case "csv": break
        case "parquet": fail("mobilityctl export: " + parquetRefusal)
        default: fail("mobilityctl export: unknown format '\(format)'; expected csv\n" + usage)
        }
        func day(_ text: String?, _ flag: String) -> DayNumber? {
            guard let text else { return nil }
            guard let d = CivilDate(parsing: Substring(text)), d.description == text else {
                fail("mobilityctl export: \(flag) '\(text)' is not a day such as 2026-03-05\n" + usage)
            }
            return d.dayNumber
        }
        let from = day(fromText, "--from") ?? .min, through = day(toText, "--to") ?? .max
        guard from <= through else { fail("mobilityctl export: --from \(fromText ?? "") is after --to \(toText ?? "")\n" + usage) }
        if let team, !AckCommandLine.isID(team) { fail("mobilityctl export: --team is 1-64 of A-Z a-z 0-9 _ -") }
        return export(state: state, team: team, from: from, through: through, output: output)
    }

    static func export(state dir: String, team: String?, from: DayNumber, through: DayNumber, output: String) -> Int32 {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory), isDirectory.boolValue else {
            writeErr("mobilityctl export: \(dir) is not a directory (name the daemon's --state directory)\n")
            return 1
        }
        let path = dir + "/state.sqlite"
        guard FileManager.default.fileExists(atPath: path) else {
            writeErr("mobilityctl export: \(dir) holds no mobilityd state (no state.sqlite)\n")
            return 1
        }
        let sink: Sink
        do {
            let store = try StateStore(path: path, readOnly: true)
            var users = try store.historyUsers()
            if let team {
                let teams = try store.profileTeams()
                users = users.filter { teams[$0]?.contains(team) == true }
                guard !users.isEmpty else {
                    let known = Set(teams.values.joined()).sorted()
                    writeErr(
                        "mobilityctl export: no user of team '\(team)' has history in \(dir) (teams named by the stored profiles: \(known.isEmpty ? "none" : known.joined(separator: ", ")))\n"
                    )
                    return 1
                }
            }
            let table = ResearchTable(series: try store.historySeries())
            guard let opened = Sink(output) else { return 1 }
            sink = opened
            var rows = 0
            try sink.write(CSVText.record(table.header))
            for u in users {
                var text = ""
                for row in table.rows(try store.history(of: u, from: from, through: through), from: from, through: through) {
                    text += CSVText.record(sink.terminal ? row.map { $0.map(TerminalText.escaped) } : row)
                    rows += 1
                }
                try sink.write(text)
            }
            try sink.finish()
            writeErr(
                "mobilityctl export: \(rows) user-day\(rows == 1 ? "" : "s") of \(users.count) user\(users.count == 1 ? "" : "s"), \(table.series.count) series, from \(dir)\n"
            )
            return 0
        } catch let e as Sink.WriteError {
            writeErr("mobilityctl export: \(e)\n")
            return 1
        } catch {
            writeErr("mobilityctl export: cannot read \(path): \(error)\n")
            return 1
        }
    }

    /// Where the CSV goes: standard output, or a file written beside its final name and renamed
    /// into place once complete (mode 0600: health data), so a failed export leaves no partial file.
    final class Sink {
        let fd: Int32
        let output: String
        let partial: String?
        var renamed = false
        /// Whether the output is a terminal: text cells are then escaped (``TerminalText``).
        let terminal: Bool

        /// `command`: whose messages (`mobilityctl COMMAND: …`) the errors are.
        init?(_ output: String, command: String = "export") {
            self.output = output
            if output == "-" {
                fd = 1
                partial = nil
                terminal = isatty(1) == 1
                return
            }
            // A new file of ours only: a file or symbolic link already at the name (planted, or
            // left by a crash) is refused, never written through nor reused with its mode.
            let tmp = output + ".partial-\(getpid())"
            fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                if errno == EEXIST {
                    writeErr(
                        "mobilityctl \(command): cannot write \(output): \(tmp) already exists (remove it if it is a leftover; it is not written through)\n")
                } else {
                    writeErr("mobilityctl \(command): cannot write \(output): \(String(cString: strerror(errno)))\n")
                }
                return nil
            }
            guard fchmod(fd, 0o600) == 0 else {
                writeErr("mobilityctl \(command): cannot write \(output): \(String(cString: strerror(errno)))\n")
                close(fd)
                unlink(tmp)
                return nil
            }
            partial = tmp
            terminal = false
        }

        deinit {
            guard let partial else { return }
            close(fd)
            if !renamed { unlink(partial) }
        }

        struct WriteError: Error, CustomStringConvertible {
            var description: String
        }

        func write(_ text: String) throws {
            let bytes = Array(text.utf8)
            var done = 0
            while done < bytes.count {
                let n = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress! + done, $0.count - done) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw WriteError(description: "cannot write \(output): \(String(cString: strerror(errno)))") }
                done += n
            }
        }

        /// Makes a file output complete: synced and renamed to its name.
        func finish() throws {
            guard let partial else { return }
            guard fsync(fd) == 0, rename(partial, output) == 0 else {
                throw WriteError(description: "cannot write \(output): \(String(cString: strerror(errno)))")
            }
            renamed = true
        }
    }
}
