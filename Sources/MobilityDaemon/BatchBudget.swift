/// How much one shard batch handles before it commits and ends: at most ``maxMessages``
/// journalled messages and about ``maxBytes`` of their payloads (a decoded samples message
/// counts ``bytesPerDecodedSample`` a sample), so that one user's flood — hundreds of
/// 1 000-id deletions queued at once — is many short batches, each committed and acknowledged,
/// with the health check and the systemd watchdog pinged between them, instead of one that ran
/// for a minute. The shard's queue stays in order: other users' messages queued behind the flood
/// wait for the batches before theirs, not for the whole flood to be taken.
struct BatchBudget: Sendable {
    /// Journalled messages a batch handles at most.
    static let maxMessages = 1_000
    /// Payload bytes after which a batch ends (the message that passes it is still handled).
    static let maxBytes = 1 << 20
    /// What a decoded sample counts against ``maxBytes`` (a typical sample's JSON).
    static let bytesPerDecodedSample = 256

    /// Messages and payload bytes handled so far.
    private(set) var messages = 0
    private(set) var bytes = 0

    /// Whether the batch has had its share.
    var spent: Bool { messages >= BatchBudget.maxMessages || bytes >= BatchBudget.maxBytes }

    /// Counts a message of `bytes` payload bytes.
    @inline(__always) mutating func message(bytes: Int) {
        messages += 1
        self.bytes += bytes
    }
}
