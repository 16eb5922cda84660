import Foundation

/// CPU time of the parties to a measurement and of the whole machine, read from `/proc` (and
/// `getrusage` for this process), so each round of `mobility-bench e2e` can say what one message
/// cost the broker, mobilityd and the harness, and how busy the cores were: on a 2-core machine
/// they share, a party's throughput is bounded by what the others leave it.
struct CPUSnapshot {
    /// CPU seconds (user + system, every thread, including those that ended) of each named
    /// process; nil when its `/proc/PID/stat` could not be read.
    var processes: [(name: String, seconds: Double?)]
    /// This process's CPU seconds (every thread, including those that ended).
    var harness: Double
    /// CPU seconds the machine's cores spent busy (`/proc/stat`: user, nice, system, irq, softirq).
    var machineBusy: Double
    /// CPU seconds the hypervisor gave to others while this VM wanted to run (`/proc/stat`: steal).
    var machineStolen: Double
    /// Monotonic seconds when taken.
    var wall: Double

    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// Reads the CPU time of `processes` (name, pid), of this process and of the machine now.
    static func take(_ processes: [(name: String, pid: Int32)]) -> CPUSnapshot {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let harness =
            Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        let machine = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8)).flatMap(machineSeconds) ?? (0, 0)
        return CPUSnapshot(
            processes: processes.map { p in (p.name, (try? String(contentsOfFile: "/proc/\(p.pid)/stat", encoding: .utf8)).flatMap(processSeconds)) },
            harness: harness, machineBusy: machine.busy, machineStolen: machine.stolen,
            wall: Double(DispatchTime.now().uptimeNanoseconds) / 1e9)
    }

    /// User + system seconds from the text of `/proc/PID/stat`. Its second field, the command
    /// name, is in parentheses and may hold spaces and parentheses itself, so the fields are
    /// counted from the last `)`: utime and stime are the 12th and 13th after it.
    static func processSeconds(_ stat: String) -> Double? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / ticksPerSecond
    }

    /// Busy and stolen seconds of all cores from the text of `/proc/stat` (its `cpu` line).
    static func machineSeconds(_ stat: String) -> (busy: Double, stolen: Double)? {
        guard let line = stat.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return nil }
        let f = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard f.count >= 8 else { return nil }
        // user nice system idle iowait irq softirq steal (guest time is counted in user already)
        return ((f[0] + f[1] + f[2] + f[5] + f[6]) / ticksPerSecond, f[7] / ticksPerSecond)
    }

    /// What `messages` cost each party between `earlier` and this snapshot, one line:
    /// `CPU a message: mosquitto 41 µs, mobilityd 289 µs, harness 52 µs; cores busy 1.93 (stolen 0.02)`.
    func costLine(since earlier: CPUSnapshot, messages: Int) -> String {
        let n = Double(max(messages, 1))
        func micros(_ seconds: Double) -> String { "\(Int((seconds * 1e6 / n).rounded())) µs" }
        var parts: [String] = []
        for (now, then) in zip(processes, earlier.processes) {
            if let a = now.seconds, let b = then.seconds { parts.append("\(now.name) \(micros(a - b))") } else { parts.append("\(now.name) ?") }
        }
        parts.append("harness \(micros(harness - earlier.harness))")
        let wallSeconds = max(wall - earlier.wall, 1e-9)
        let busy = String(format: "%.2f", (machineBusy - earlier.machineBusy) / wallSeconds)
        let stolen = String(format: "%.2f", (machineStolen - earlier.machineStolen) / wallSeconds)
        return "CPU a message: " + parts.joined(separator: ", ") + "; cores busy \(busy) (stolen \(stolen))"
    }
}
