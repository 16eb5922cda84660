/// A stored user state this build cannot read. Loading stops at it (the daemon exits 1): a state
/// is never read as a guess, since a wrong alert state or provenance would change alerts.
package struct UserStateDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong with the bytes.
    package enum Code: Hashable, Sendable {
        /// A tag byte that names no case this build knows (written by a newer build, or corrupted).
        case unknownTag(field: String, tag: UInt8)
        /// The bytes end before the state does, or a count is negative.
        case truncated
        /// Well-formed bytes that break an invariant (folded days out of order).
        case inconsistent
    }

    /// The user whose state it is.
    package var user: String
    /// What is wrong.
    package var code: Code

    package init(user: String, code: Code) {
        self.user = user
        self.code = code
    }

    /// One line for the log: the user is named by the FNV-1a hash of its id, never by the id.
    package var description: String {
        let what: String
        switch code {
        case .unknownTag(let field, let tag): what = "unknown \(field) tag \(tag) (written by a newer build, or corrupted)"
        case .truncated: what = "the data ends early or holds a negative count"
        case .inconsistent: what = "the data breaks an invariant (folded days out of order)"
        }
        // Logs carry no user ids (docs/security.md): name the user by a hash of its id.
        return "the stored state of a user (id hash \(StateStore.fingerprint(user))) cannot be read: \(what)"
    }
}
