import Foundation
import Synchronization
import TestSupport
import Testing

@testable import MobilityDaemon

/// The publisher's acknowledgement bookkeeping, without a broker.
@Suite struct PublishTrackerTests {
    /// The callback registered for the broker's answers is called once an answer, as cheaply at
    /// the hundred-thousandth as at the first. Held in the Mutex itself, it came out of every
    /// read wrapped in two more reabstraction thunks: the 100 000th answer's call went through
    /// 200 000 of them, and these answers took minutes (or overflowed the network thread's stack).
    @Test func theAnswerCallbackDoesNotGrowWithTheAnswers() {
        let t = PublishTracker()
        let calls = Atomic<Int>(0)
        t.whenAnswered { calls.add(1, ordering: .relaxed) }
        let n = 100_000
        let answering = Thread {
            for i in 0..<n {
                let mid = Int32(i % 60_000) + 1
                t.published(mid: mid, id: nil, topic: "mobility/v1/users/u/acks")
                t.answered(mid: mid, reasonCode: 0)
            }
        }
        answering.start()
        #expect(eventually(timeout: 30) { calls.load(ordering: .relaxed) == n }, "\(calls.load(ordering: .relaxed)) of \(n) answers")
        #expect(t.inFlight == 0)
    }

    /// What wakes the ack flush: an answer that settles an outbox item
    /// (accepted or refused, registered before or after it), a refused untracked publish, a
    /// permanent failure; not an accepted commit acknowledgement or status, which leave nothing
    /// to take, nor an answer that came before its registration.
    @Test func onlyAnswersThatLeaveSomethingToTakeWakeTheFlush() {
        let t = PublishTracker()
        let wakes = Atomic<Int>(0)
        t.whenOutputsAnswered { wakes.add(1, ordering: .relaxed) }
        func woke(_ step: () -> Void) -> Bool {
            let before = wakes.load(ordering: .relaxed)
            step()
            return wakes.load(ordering: .relaxed) == before + 1
        }
        t.published(mid: 1, id: nil, topic: "mobility/v1/users/u/acks", ackSerial: 1)
        #expect(!woke { t.answered(mid: 1, reasonCode: 0) })
        t.published(mid: 2, id: 20, topic: "mobility/v1/users/u/alerts/r")
        #expect(woke { t.answered(mid: 2, reasonCode: 0) })
        #expect(t.hasAnsweredOutputs)
        #expect(t.drain() == [20])
        #expect(!t.hasAnsweredOutputs)
        t.published(mid: 3, id: nil, topic: "mobility/v1/users/u/acks", ackSerial: 2)
        #expect(woke { t.answered(mid: 3, reasonCode: 0x87) })
        #expect(!woke { t.answered(mid: 4, reasonCode: 0) })  // before its registration
        #expect(woke { t.published(mid: 4, id: 40, topic: "mobility/v1/users/u/series") })
        #expect(woke { t.failedPermanently(id: 50, topic: "mobility/v1/users/u/series", rc: 16) })
        #expect(t.drain() == [40])
        #expect(t.drainRefused().count == 2)
        #expect(!t.hasAnsweredOutputs)
    }

    @Test func anAnswerBeforeItsRegistrationIsClaimedByIt() {
        let t = PublishTracker()
        t.answered(mid: 7, reasonCode: 0)  // the PUBACK raced ahead of published(mid:)
        t.published(mid: 7, id: 70, topic: "mobility/v1/users/u/series")
        #expect(t.drain() == [70])
        #expect(t.inFlight == 0)
    }

    /// An untracked publish (a commit acknowledgement) is registered too, so that its answer is
    /// not left behind to acknowledge a later outbox item that reuses its message id.
    @Test func anUntrackedAnswerCannotAcknowledgeALaterOutboxItem() {
        let t = PublishTracker()
        t.published(mid: 9, id: nil, topic: "mobility/v1/users/u/acks")
        t.answered(mid: 9, reasonCode: 0)
        t.published(mid: 9, id: 90, topic: "mobility/v1/users/u/alerts/r")  // the id wrapped around
        #expect(t.drain().isEmpty)  // not acknowledged by the old answer
        t.answered(mid: 9, reasonCode: 0)
        #expect(t.drain() == [90])
    }

    /// A commit acknowledgement's answer, accepted or refused, is handed back with its serial.
    @Test func answeredAcknowledgementsAreReportedWithTheirSerial() {
        let t = PublishTracker()
        t.published(mid: 4, id: nil, topic: "mobility/v1/users/u/acks", ackSerial: 41)
        t.published(mid: 5, id: nil, topic: "mobility/v1/users/v/acks", ackSerial: 42)
        t.published(mid: 6, id: nil, topic: "mobility/v1/daemon/a/status")
        t.answered(mid: 4, reasonCode: 0)
        t.answered(mid: 5, reasonCode: 0x87)
        t.answered(mid: 6, reasonCode: 0)
        #expect(t.drainAnsweredAcks().map { "\($0.topic) \($0.serial)" } == ["mobility/v1/users/u/acks 41", "mobility/v1/users/v/acks 42"])
        #expect(t.drainAnsweredAcks().isEmpty)
        #expect(t.drain().isEmpty)
    }

    @Test(arguments: [(Int32(0x87), "not_authorized"), (0x95, "packet_too_large"), (0x97, "quota_exceeded"), (0x80, "unspecified_error")])
    func refusalsAreCollectedWithKindAndReason(code: Int32, reason: String) {
        let t = PublishTracker()
        t.published(mid: 1, id: 10, topic: "mobility/v1/users/u/alerts/stalled_recovery")
        t.published(mid: 2, id: nil, topic: "mobility/v1/users/u/acks")
        t.published(mid: 3, id: 30, topic: "mobility/v1/users/u/series")
        t.answered(mid: 1, reasonCode: code)
        t.answered(mid: 2, reasonCode: code)
        t.answered(mid: 3, reasonCode: 0x10)  // "no matching subscribers" is a success
        #expect(t.drain() == [30])
        #expect(t.drainRefused() == [Refusal(outboxID: 10, kind: .alert, reason: reason), Refusal(outboxID: nil, kind: .ack, reason: reason)])
        #expect(t.drainRefused().isEmpty)
    }

    @Test(arguments: [
        ("mobility/v1/users/u/alerts/r", OutputKind.alert), ("mobility/v1/users/u/series", .series),
        ("mobility/v1/users/u/rejected", .rejected), ("mobility/v1/rejected", .rejected),
        ("mobility/v1/users/u/acks", .ack), ("mobility/v1/daemon/d/status", .status), ("x/y", .other),
        ("mobility/v1/users/alerts/acks", .ack), ("mobility/v1/users/series/rejected", .rejected),
        ("mobility/v1/users/acks/alerts/r", .alert), ("mobility/v1/users/alerts/series", .series)
    ])
    func outputKinds(topic: String, kind: OutputKind) {
        #expect(OutputKind(topic: topic) == kind)
    }
}
