/// An error a ``StateBackend`` throws that the daemon must recognise whatever the backend is.
package protocol StateBackendError: Error {
    /// Whether the write was fenced: another instance took over a partition this run committed
    /// for, so this run is deposed and nothing of the transaction was written.
    var isFenced: Bool { get }
}

/// Whether a backend error says this run was deposed (``StateBackendError/isFenced``): its
/// outputs are never published and a command it received is left to the new owner to answer.
package func isFencedWrite(_ error: any Error) -> Bool { (error as? any StateBackendError)?.isFenced ?? false }
