import CSimdJSON
import MobilityModel

#if canImport(Glibc)
    import Glibc
#endif

/// One simdjson parser per thread (a parser is reusable but not shareable), created on first use
/// and freed when the thread exits.
enum SampleJSONParser {
    /// Documents up to this size; larger ones are refused before parsing (`maxPayloadBytes`).
    static let capacity = 64 << 20

    private static let key: pthread_key_t = {
        var k = pthread_key_t()
        let rc = pthread_key_create(&k) { p in mw_json_parser_destroy(OpaquePointer(p)) }
        precondition(rc == 0, "pthread_key_create failed")
        return k
    }()

    static var forThisThread: OpaquePointer? {
        if let p = pthread_getspecific(key) { return OpaquePointer(p) }
        guard let p = mw_json_parser_create(capacity, JSONValue.maxDepth) else { return nil }
        pthread_setspecific(key, UnsafeRawPointer(p))
        return p
    }
}
