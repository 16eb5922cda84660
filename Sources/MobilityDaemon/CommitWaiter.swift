import Dispatch
import Synchronization

/// A partition session's wait for its message's commit: the shard says whether everything queued
/// before it was committed (``ShardItem/durable(_:)``), and the session acknowledges the message
/// to the broker only then (its PUBACK is written after the callback returns), so nothing the
/// broker was told is taken lives only on this machine.
final class CommitWaiter: Sendable {
    private let outcome = Mutex<Bool?>(nil)
    private let done = DispatchSemaphore(value: 0)
    /// The stream sequence a partition's input is committed through once everything before the
    /// waiter is (the JetStream intake): recorded by the same commit.
    let streamSequence: (partition: Int, sequence: UInt64)?
    /// More input waits behind it at the broker (its fetch came back full), which the partition
    /// fetches only once this commit is answered: the shard commits at once instead of waiting
    /// for its commit interval, which only gathers small hand-offs.
    let backlog: Bool

    /// A waiter; `streamSequence`: the partition's stream position its commit records;
    /// `backlog`: more input waits behind it.
    init(streamSequence: (partition: Int, sequence: UInt64)? = nil, backlog: Bool = false) {
        self.streamSequence = streamSequence
        self.backlog = backlog
    }

    /// Everything before it is committed.
    func committed() { finish(true) }

    /// The shard closed without committing it (the store refused: fenced, or unreachable).
    func failed() { finish(false) }

    private func finish(_ ok: Bool) {
        let first = outcome.withLock { o -> Bool in
            guard o == nil else { return false }
            o = ok
            return true
        }
        if first { done.signal() }
    }

    /// Waits until the commit (true), its failure, or `abandoned()` turns true (checked every
    /// 50 ms: the partition was revoked; false).
    func wait(abandoned: () -> Bool) -> Bool {
        while done.wait(timeout: .now() + .milliseconds(50)) == .timedOut {
            if abandoned() { return false }
        }
        return outcome.withLock { $0 } ?? false
    }
}
