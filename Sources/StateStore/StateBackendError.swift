/// An error a ``StateBackend`` throws that the daemon must recognise whatever the backend is.
package protocol StateBackendError: Error {
    /// Whether the write was fenced: another instance took over a partition this run committed
    /// for, so this run is deposed and nothing of the transaction was written.
    var isFenced: Bool { get }
    /// Whether the backend did not answer: the connection could not be made or was lost, or the
    /// server is shutting down or starting. Nothing is wrong with what it holds; the same reads
    /// succeed once it answers again.
    var isUnavailable: Bool { get }
}

extension StateBackendError {
    package var isUnavailable: Bool { false }
}

/// Whether a backend error says this run was deposed (``StateBackendError/isFenced``): its
/// outputs are never published and a command it received is left to the new owner to answer.
package func isFencedWrite(_ error: any Error) -> Bool { (error as? any StateBackendError)?.isFenced ?? false }

/// Whether a backend error says the backend did not answer (``StateBackendError/isUnavailable``).
package func isUnavailableStore(_ error: any Error) -> Bool { (error as? any StateBackendError)?.isUnavailable ?? false }
