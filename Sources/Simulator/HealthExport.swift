import CLibXML2
import Foundation
import Ingest
import MobilityModel
import MobilityWire
import RuleEngine

/// Replays a real Apple Health export (`export.xml`, or `export.zip` containing it) as gateway traffic.
///
/// The XML is read with libxml2's streaming reader (constant memory whatever the file size); only
/// the mobility `Record`s are kept, then published in `creationDate` order (arrival order), in
/// batches of up to 50 as an anchored query would deliver them. Display units are normalised by
/// the daemon; metadata keys keep their export spelling (`HKWasUserEntered`, `HKTimeZone`) and
/// `"1"`/`"0"` booleans, which the wire contract accepts. Malformed records are reported and skipped.
package struct HealthExport: Sendable {
    /// The export file: `export.xml`, or an `export.zip` containing it.
    package let path: String
    /// The user id the traffic is published for (topic-safe).
    package let user: String
    /// The IANA time zone published in the user's profile message, ahead of the samples (default UTC).
    package let defaultTimeZone: String
    /// The topics the traffic is addressed to.
    package var layout = TopicLayout()
    /// The most samples in one published batch (default 50, as an anchored query delivers them).
    package var batchSize = 50

    package init(path: String, user: String, defaultTimeZone: String = "UTC") throws(ExportError) {
        self.path = path
        self.user = user
        self.defaultTimeZone = defaultTimeZone
    }

    /// What the parse found.
    package struct Report: Sendable, CustomStringConvertible {
        /// Every `Record` element read, mobility or not.
        package var records = 0
        /// The mobility records kept and published.
        package var mobility = 0
        /// Kept records per metric name.
        package var byType: [String: Int] = [:]
        /// The records skipped as malformed: the XML line and why.
        package var malformed: [(line: Int, reason: String)] = []
        /// A summary for the console: the counts, then the first 20 malformed records.
        package var description: String {
            var s = "export: \(records) records, \(mobility) mobility samples"
            if !byType.isEmpty { s += " (" + byType.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")" }
            s += ", \(malformed.count) malformed skipped\n"
            for m in malformed.prefix(20) { s += "  line \(m.line): \(m.reason)\n" }
            if malformed.count > 20 { s += "  … \(malformed.count - 20) more\n" }
            return s
        }
    }

    /// One kept record.
    struct Kept {
        var created: Timestamp
        var order: Int
        var json: String
    }

    /// Parses the export and returns the traffic (profile first, then sample batches) and a report.
    package func traffic() throws(ExportError) -> ([TrafficRecord], Report) {
        let source: ByteSource
        do { source = try ByteSource(path: path) } catch let e as ExportError { throw e } catch { throw ExportError("\(error)") }
        let box = Unmanaged.passRetained(SourceBox(source))
        defer { box.release() }
        guard
            let reader = xmlReaderForIO(
                { ctx, buf, len in
                    guard let ctx, let buf else { return -1 }
                    let b = Unmanaged<SourceBox>.fromOpaque(ctx).takeUnretainedValue()
                    do {
                        return Int32(try buf.withMemoryRebound(to: UInt8.self, capacity: Int(len)) { try b.source.read(into: $0, count: Int(len)) })
                    } catch {
                        b.error = "\(error)"
                        return -1
                    }
                }, nil, box.toOpaque(), path, nil, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOBLANKS.rawValue | XML_PARSE_HUGE.rawValue))
        else {
            throw ExportError("cannot start the XML reader")
        }
        defer { xmlFreeTextReader(reader) }

        var report = Report()
        var kept: [Kept] = []
        func attr(_ name: String) -> String? {
            guard let p = xmlTextReaderGetAttribute(reader, name) else { return nil }
            defer { mw_xml_free(p) }
            return String(cString: p)
        }
        var rc = xmlTextReaderRead(reader)
        while rc == 1 {
            if xmlTextReaderNodeType(reader) == 1, let n = xmlTextReaderConstName(reader), strcmp(n, "Record") == 0 {
                report.records += 1
                let line = Int(xmlTextReaderGetParserLineNumber(reader))
                let type = attr("type") ?? ""
                let metric = MetricKind(identifier: type)
                var fields: [String: String] = [:]
                if metric != nil {
                    for k in ["unit", "value", "startDate", "endDate", "creationDate", "sourceName", "sourceVersion", "device"] { fields[k] = attr(k) }
                }
                var metadata: [(String, String)] = []
                if xmlTextReaderIsEmptyElement(reader) == 0 {
                    let depth = xmlTextReaderDepth(reader)
                    rc = xmlTextReaderRead(reader)
                    while rc == 1, xmlTextReaderDepth(reader) > depth {
                        if metric != nil, xmlTextReaderNodeType(reader) == 1, let cn = xmlTextReaderConstName(reader), strcmp(cn, "MetadataEntry") == 0,
                            let k = attr("key"), let v = attr("value")
                        {
                            metadata.append((k, v))
                        }
                        rc = xmlTextReaderRead(reader)
                    }
                    if rc != 1 { break }
                } else {
                    rc = xmlTextReaderRead(reader)
                }
                if let metric {
                    switch record(metric, fields, metadata, order: kept.count) {
                    case .success(let k):
                        kept.append(k)
                        report.mobility += 1
                        report.byType[metric.name, default: 0] += 1
                    case .failure(let e): report.malformed.append((line, e.description))
                    }
                }
                continue  // the reader already stands on the next node
            }
            rc = xmlTextReaderRead(reader)
        }
        if let e = box.takeUnretainedValue().error { throw ExportError("reading \(path): \(e)") }
        if rc < 0 {
            throw ExportError(
                "\(path):\(xmlTextReaderGetParserLineNumber(reader)): the XML is not well-formed; \(report.mobility) mobility samples read before the error")
        }
        kept.sort { ($0.created, $0.order) < ($1.created, $1.order) }
        var out = [TrafficRecord(topic: layout.profile(user), payload: Array("{\"timeZone\":\"\(defaultTimeZone)\"}".utf8))]
        var k = 0
        while k < kept.count {
            let batch = kept[k..<min(k + batchSize, kept.count)]
            out.append(TrafficRecord(topic: layout.samples(user), payload: Array(("[" + batch.map(\.json).joined(separator: ",") + "]").utf8)))
            k += batchSize
        }
        return (out, report)
    }

    func record(_ metric: MetricKind, _ f: [String: String], _ metadata: [(String, String)], order: Int) -> Result<Kept, ExportError> {
        guard let unit = f["unit"] else { return .failure(ExportError("\(metric.name) without a unit")) }
        guard let vs = f["value"], let value = Double(vs), value.isFinite else {
            return .failure(ExportError("\(metric.name) with a missing or invalid value"))
        }
        guard let s = f["startDate"], let start = ISO8601.parse(s) else { return .failure(ExportError("\(metric.name) with an invalid startDate")) }
        guard let e = f["endDate"], let end = ISO8601.parse(e) else { return .failure(ExportError("\(metric.name) with an invalid endDate")) }
        let created = f["creationDate"].flatMap { ISO8601.parse($0)?.0 } ?? end.0
        let userEntered = metadata.contains { MetadataKey.canonical($0.0) == MetadataKey.wasUserEntered && ($0.1 == "1" || $0.1 == "true") }
        let sourceName = f["sourceName"] ?? "unknown"
        // Exports carry no bundle id: Apple device data gets a synthesised com.apple.health id.
        let bundle = userEntered ? "com.apple.Health" : "com.apple.health." + String(fnv(sourceName), radix: 16)
        let id = "export-" + String(fnv("\(metric.name)|\(s)|\(e)|\(vs)|\(sourceName)"), radix: 16)
        var json = "{\"id\":\"\(id)\",\"type\":\"\(metric.healthKitIdentifier)\",\"value\":\(vs),\"unit\":"
        JSONWriter.quote(unit, into: &json)
        json += ",\"start\":\"\(ISO8601.format(start.0, offsetSeconds: start.1))\",\"end\":\"\(ISO8601.format(end.0, offsetSeconds: end.1))\""
        json += ",\"source\":{\"bundleId\":"
        JSONWriter.quote(bundle, into: &json)
        json += ",\"name\":"
        JSONWriter.quote(sourceName, into: &json)
        if let v = f["sourceVersion"] { json += ",\"version\":"; JSONWriter.quote(v, into: &json) }
        json += "}"
        if !metadata.isEmpty {
            json += ",\"metadata\":{"
            for (i, (k, v)) in metadata.prefix(64).enumerated() {
                if i > 0 { json += "," }
                JSONWriter.quote(k, into: &json)
                json += ":"
                JSONWriter.quote(String(v.prefix(256)), into: &json)
            }
            json += "}"
        }
        json += "}"
        return .success(Kept(created: created, order: order, json: json))
    }

    func fnv(_ s: String) -> UInt64 { FNV1a64.hash(s) }
}

/// Holds the byte source for libxml2's read callback.
final class SourceBox {
    let source: ByteSource
    var error: String?
    init(_ s: ByteSource) { source = s }
}
