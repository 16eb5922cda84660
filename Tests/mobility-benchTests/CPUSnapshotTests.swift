import Foundation
import Glibc
import Testing

@testable import mobility_bench

/// `CPUSnapshot`, which `mobility-bench e2e` prints a cost a message with: the `/proc` parsers on
/// crafted text (a command name holding spaces and parentheses), and a real process's CPU time
/// growing with work.
@Suite struct CPUSnapshotTests {
    static let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))

    @Test func processTimeIsCountedFromTheLastParenthesis() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime …
        let stat = "4242 (a) b (c) d) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 100 0 0\n"
        #expect(CPUSnapshot.processSeconds(stat) == 300 / Self.ticks)
        #expect(CPUSnapshot.processSeconds("4242 (x) S 1 2 3") == nil)
        #expect(CPUSnapshot.processSeconds("no parenthesis at all") == nil)
    }

    @Test func machineTimeIsBusyAndStolenApart() throws {
        // cpu user nice system idle iowait irq softirq steal guest guest_nice
        let stat = "cpu  1000 10 300 9000 40 5 20 7 100 0\ncpu0 500 5 150 4500 20 2 10 3 50 0\nintr 1 2 3\n"
        let seconds = try #require(CPUSnapshot.machineSeconds(stat))
        #expect(seconds.busy == (1000 + 10 + 300 + 5 + 20) / Self.ticks)  // idle, iowait and guest (in user) not added again
        #expect(seconds.stolen == 7 / Self.ticks)
        #expect(CPUSnapshot.machineSeconds("cpu0 1 2 3 4 5 6 7 8\n") == nil)
        #expect(CPUSnapshot.machineSeconds("cpu  1 2 3\n") == nil)
    }

    @Test func aBusyProcessShowsItsWork() throws {
        let me = getpid()
        let before = CPUSnapshot.take([(name: "self", pid: me), (name: "gone", pid: Int32.max)])
        // Spins until this process has spent 300 ms of CPU (not of wall time: on two loaded cores
        // 300 ms of wall time may hold much less).
        func cpuNanoseconds() -> Int {
            var t = timespec()
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)
            return t.tv_sec * 1_000_000_000 + t.tv_nsec
        }
        var x: UInt64 = 1
        let end = cpuNanoseconds() + 300_000_000
        while cpuNanoseconds() < end { for _ in 0..<10_000 { x = x &* 6_364_136_223_846_793_005 &+ 1 } }
        #expect(x != 0)
        let after = CPUSnapshot.take([(name: "self", pid: me), (name: "gone", pid: Int32.max)])
        let spent = try #require(after.processes[0].seconds) - (try #require(before.processes[0].seconds))
        #expect(spent >= 0.2, "300 ms of spinning showed \(spent) s")
        #expect(after.harness - before.harness >= 0.2)
        #expect(after.machineBusy - before.machineBusy >= 0.2)
        #expect(before.processes[1].seconds == nil)
        let line = after.costLine(since: before, messages: 1000)
        #expect(line.hasPrefix("CPU a message: self "), "\(line)")
        #expect(line.contains("gone ?"), "\(line)")
        #expect(line.contains("; cores busy "), "\(line)")
    }
}
