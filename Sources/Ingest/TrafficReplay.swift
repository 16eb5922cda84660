import MobilityModel
import MobilityWire
import RuleEngine
import RuleLanguage

#if canImport(Glibc)
    import Glibc
#endif

/// One line of recorded traffic: `{"topic": "...", "payload": <JSON value or raw string>}`.
package struct TrafficRecord: Hashable, Sendable {
    /// The MQTT topic.
    package var topic: String
    /// The payload bytes exactly as published.
    package var payload: [UInt8]

    package init(topic: String, payload: [UInt8]) {
        self.topic = topic
        self.payload = payload
    }

    /// Parses a traffic line. A string payload is taken verbatim (so invalid JSON can be recorded);
    /// any other JSON value is serialised compactly.
    package static func parse(_ line: [UInt8]) -> Result<TrafficRecord, TrafficError> {
        switch JSONValue.parse(line) {
        case .failure(let e): return .failure(TrafficError(message: "not a JSON line: \(e)"))
        case .success(let v):
            guard case .string(let topic)? = v["topic"] else { return .failure(TrafficError(message: "missing string field 'topic'")) }
            guard let p = v["payload"] else { return .failure(TrafficError(message: "missing field 'payload'")) }
            if case .string(let s) = p { return .success(TrafficRecord(topic: topic, payload: Array(s.utf8))) }
            return .success(TrafficRecord(topic: topic, payload: Array(p.text.utf8)))
        }
    }

    /// The JSON line for this record (payload embedded as JSON when it parses, else as a string).
    package var line: String {
        var out = "{\"topic\":"
        JSONWriter.quote(topic, into: &out)
        out += ",\"payload\":"
        if case .success(let v) = JSONValue.parse(payload) {
            out += v.text
        } else {
            JSONWriter.quote(String(decoding: payload, as: UTF8.self), into: &out)
        }
        return out + "}"
    }
}

/// Feeds recorded traffic through an event-clock ingestor: what `mobilityctl replay` does.
package struct Replay: Sendable {
    /// The ingestor.
    package private(set) var ingestor: Ingestor
    /// The topic of the last `samples` line and its user (``samplesUser(topic:)``).
    private var lastSamplesTopic: [UInt8] = []
    private var lastSamplesUser = ""

    /// Creates a replay over a program.
    package init(program: Program, configuration: EngineConfiguration, layout: TopicLayout = TopicLayout()) {
        ingestor = Ingestor(engine: Engine(program: program, configuration: configuration), layout: layout, clock: .event)
        ingestor.tracksLastSampleID = false
    }

    /// What one traffic line produced.
    package struct Fed: Sendable {
        /// Alert and series payloads as JSON.
        package var outputs: [String] = []
        /// The rejections, as published on the `rejected` topics.
        package var rejections: [String] = []
    }

    /// Feeds one traffic line; returns its outputs and rejections.
    package mutating func feed(line: [UInt8]) -> Result<Fed, TrafficError> {
        var out: [EngineOutput] = []
        if let e = feed(line: line, into: &out) { return .failure(e) }
        return .success(Replay.split(out))
    }

    /// Feeds one traffic line, appending what the engine produced to `out` (for tools that read
    /// the outputs as values, such as `mobilityctl report`); nil, or why the line is malformed.
    package mutating func feed(line: [UInt8], into out: inout [EngineOutput]) -> TrafficError? {
        line.withUnsafeBufferPointer { feed(line: $0, into: &out) }
    }

    /// ``feed(line:into:)`` of a line in a caller's buffer (without its newline).
    ///
    /// A `samples` line of the usual shape (``TrafficLine``) is decoded straight from the line's
    /// bytes, the payload exactly as recorded; any other line, and one whose payload is not JSON
    /// (so that a broken line is still reported as malformed), through ``TrafficRecord/parse(_:)``.
    package mutating func feed(line: UnsafeBufferPointer<UInt8>, into out: inout [EngineOutput]) -> TrafficError? {
        feed(line: line, scan: TrafficLine.scan(line), into: &out)
    }

    /// ``feed(line:into:)`` of a line already scanned (``TrafficLine/scan(_:)`` of `line`, nil if not of its shape).
    mutating func feed(line: UnsafeBufferPointer<UInt8>, scan: TrafficLine?, into out: inout [EngineOutput]) -> TrafficError? {
        if let scan {
            let topic = UnsafeBufferPointer(rebasing: line[scan.topic])
            if let user = samplesUser(topic: topic) {
                let decoded = ingestor.decoder.samples(utf8: UnsafeBufferPointer(rebasing: line[scan.payload]), user: user)
                if case .failure(let r) = decoded, r.reason == .notJSON {
                    // The full parse decides: a malformed line, or a string payload that is not JSON.
                } else {
                    ingestor.handle(
                        decodedSamples: decoded, user: user, topic: String(decoding: topic, as: UTF8.self), now: Timestamp(milliseconds: 0),
                        into: &out)
                    return nil
                }
            }
        }
        switch TrafficRecord.parse(Array(line)) {
        case .failure(let m): return m
        case .success(let r):
            ingestor.handle(topic: r.topic, payload: r.payload, now: Timestamp(milliseconds: 0), into: &out)
            return nil
        }
    }

    /// The user of a `samples` topic, nil for any other topic. Consecutive lines are mostly one
    /// user's: the last samples topic and its user are kept, so such a line costs one `memcmp`
    /// instead of parsing the topic and making the user a `String` again.
    private mutating func samplesUser(topic: UnsafeBufferPointer<UInt8>) -> String? {
        if topic.count == lastSamplesTopic.count, topic.count > 0,
            lastSamplesTopic.withUnsafeBufferPointer({ memcmp($0.baseAddress!, topic.baseAddress!, topic.count) == 0 })
        {
            return lastSamplesUser
        }
        guard case .inbound(let user, .samples) = ingestor.layout.parse(utf8: topic) else { return nil }
        lastSamplesTopic.removeAll(keepingCapacity: true)
        lastSamplesTopic.append(contentsOf: topic)
        lastSamplesUser = user
        return user
    }

    /// ``finish()`` for one user (``Ingestor/clockedUsers`` lists them in the order ``finish()`` takes).
    package mutating func finishUser(_ user: String, into out: inout [EngineOutput]) { ingestor.closeOpenDays(of: user, into: &out) }

    /// ``finish()``, appending the outputs to `out`.
    package mutating func finish(into out: inout [EngineOutput]) { ingestor.closeOpenDays(into: &out) }

    /// The final watermark of a bounded input: closes each user's days up to and including the
    /// day of the latest sample seen from that user (in user-id order), as a batch engine's last
    /// watermark does, so that the last day of data is evaluated. Later, empty days stay open.
    package mutating func finish() -> Fed {
        var out: [EngineOutput] = []
        ingestor.closeOpenDays(into: &out)
        return Replay.split(out)
    }

    /// How many inputs were rejected so far, by reason.
    package var rejected: [RejectionReason: Int] { ingestor.counters.rejected }

    private static func split(_ out: [EngineOutput]) -> Fed {
        var fed = Fed()
        for o in out {
            switch o {
            case .alert(let a): fed.outputs.append(a.json)
            case .series(let s): fed.outputs.append(s.json)
            case .rejected(let user, let topic, let r): fed.rejections.append(r.json(user: user, topic: topic))
            }
        }
        return fed
    }
}

/// A malformed traffic line.
package struct TrafficError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong.
    package var message: String
    /// The message.
    package var description: String { message }
}
