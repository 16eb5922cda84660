import MobilityModel
import MobilityWire

/// libFuzzer entry: every inbound payload decoder must reject garbage without crashing.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecoder(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let d = WireDecoder(maxPayloadBytes: 1 << 20, maxBatch: 5000)
    _ = d.samples(bytes, user: "fuzz")
    _ = d.events(bytes, user: "fuzz")
    _ = d.deletions(bytes)
    _ = d.profile(bytes)
    if case .success(let v) = JSONValue.parse(bytes) {
        // Round trip: what we write, we read back identically.
        guard case .success(let again) = JSONValue.parse(v.text), again == v else { fatalError("JSON round trip failed") }
    }
    if let s = String(validating: bytes, as: UTF8.self) { _ = ISO8601.parse(s) }
    return 0
}
