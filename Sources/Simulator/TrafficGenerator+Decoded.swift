import Ingest
import MobilityModel
import MobilityWire
import RuleEngine

extension TrafficGenerator {
    /// A message of ``generateDecoded(day:templates:)``.
    package enum DecodedMessage: Sendable {
        /// A `samples` message as the wire decoder gives it for the payload ``generate(day:)`` publishes.
        case samples(Result<[WireDecoder.Item<Sample>], Rejection>)
        /// Any other message, as published.
        case record(TrafficRecord)
    }

    /// A decoded message with the time it is published.
    package struct DecodedTimed: Sendable {
        /// When the gateway publishes the message (event time).
        package var at: Timestamp
        /// The message.
        package var message: DecodedMessage
    }

    /// What the wire decoder makes of a sample's fixed fields (type, unit, source, zone, metadata),
    /// learnt by decoding one such sample, so that the next ones need no JSON: only their id,
    /// value and times differ. One per thread (``Population/firings(program:threads:)``).
    package struct SampleTemplates: Sendable {
        struct Key: Equatable {
            var type: UInt, unit: UInt, bundle: UInt
            var zone: String?, metadata: String?
        }
        let decoder: WireDecoder
        /// A handful (the generator's kinds of sample): searched in order, cheaper than hashing a key.
        var templates: [(key: Key, sample: Sample, unit: MeasureUnit)] = []

        /// Creates an empty set of templates for a decoder's rules.
        package init(decoder: WireDecoder = WireDecoder()) { self.decoder = decoder }

        /// The sample the decoder gives for `spec` (published alone), or nil when only the decoder
        /// itself can tell: an implausible value, or fixed fields it refuses.
        mutating func sample(_ spec: SampleSpec, of g: TrafficGenerator) -> Sample? {
            let key = Key(
                type: UInt(bitPattern: spec.type.utf8Start), unit: UInt(bitPattern: spec.unit.utf8Start),
                bundle: UInt(bitPattern: spec.bundle.utf8Start), zone: spec.zone, metadata: spec.metadata)
            var k = 0
            while k < templates.count, templates[k].key != key { k += 1 }
            if k == templates.count {
                guard case .success(let items) = decoder.samples(g.sample(spec), user: g.persona.user), items.count == 1,
                    case .success(let s) = items[0], let unit = MeasureUnit.healthKit(spec.unit.description)
                else { return nil }
                templates.append((key, s, unit))
            }
            let (template, unit) = (templates[k].sample, templates[k].unit)
            // The value as written in the JSON (5 decimals; a Double's description reads back exactly).
            let value = unit.si((spec.value * 100_000).rounded() / 100_000)
            guard value.isFinite, template.metric.plausibleRange.contains(value), spec.end >= spec.start else { return nil }
            var s = template
            s.id = spec.id
            s.value = value
            s.start = spec.start
            s.end = spec.end
            s.utcOffset = spec.offset
            return s
        }
    }

    /// ``generate(day:)`` with each `samples` message already decoded: the samples the wire decoder
    /// would give for its payload (``SampleTemplates``; a message with anything unusual is decoded
    /// from its JSON), without writing and parsing the JSON. The quality run's path.
    package func generateDecoded(day d: Int, templates: inout SampleTemplates) -> [DecodedTimed] {
        decoded(parts(day: d), templates: &templates)
    }

    /// ``generate(block:)`` with each `samples` message already decoded (see
    /// ``generateDecoded(day:templates:)``): one sync of ``syncDays`` days.
    package func generateDecoded(block: ClosedRange<Int>, templates: inout SampleTemplates) -> [DecodedTimed] {
        guard syncDays != nil else { return block.flatMap { generateDecoded(day: $0, templates: &templates) } }
        return decoded(parts(block: block), templates: &templates)
    }

    /// Parts as decoded messages.
    func decoded(_ parts: [Part], templates: inout SampleTemplates) -> [DecodedTimed] {
        parts.map { part in
            switch part {
            case .record(let t): return DecodedTimed(at: t.at, message: .record(t.record))
            case .samples(let at, let batch):
                // A sample's JSON is under 1 KB: a batch within both limits by this bound is within them.
                guard batch.count <= templates.decoder.maxBatch, batch.count * 1024 <= templates.decoder.maxPayloadBytes else {
                    return DecodedTimed(at: at, message: .samples(templates.decoder.samples(payload(batch), user: persona.user)))
                }
                var items: [WireDecoder.Item<Sample>] = []
                items.reserveCapacity(batch.count)
                for spec in batch {
                    guard let s = templates.sample(spec, of: self) else {
                        return DecodedTimed(at: at, message: .samples(templates.decoder.samples(payload(batch), user: persona.user)))
                    }
                    items.append(.success(s))
                }
                return DecodedTimed(at: at, message: .samples(.success(items)))
            }
        }
    }
}
