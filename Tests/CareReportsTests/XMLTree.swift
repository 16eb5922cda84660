import CLibXML2

/// A page parsed by libxml2's XML reader (not its HTML parser): parsing fails on anything that is
/// not well-formed XML, and the tree lets the tests find elements by name and attribute.
final class XMLTree {
    /// An element.
    final class Element {
        let name: String
        let namespace: String
        var attributes: [String: String] = [:]
        var children: [Element] = []
        var text = ""
        weak var parent: Element?

        init(name: String, namespace: String) {
            self.name = name
            self.namespace = namespace
        }

        /// This element and all below it, in document order.
        var descendants: [Element] { [self] + children.flatMap(\.descendants) }

        /// The text of this element and all below it.
        var allText: String { text + children.map(\.allText).joined() }

        /// The `class` attribute's words.
        var classes: Set<String> { Set((attributes["class"] ?? "").split(separator: " ").map(String.init)) }

        /// A number attribute.
        func number(_ a: String) -> Double? { attributes[a].flatMap(Double.init) }
    }

    /// The root element.
    let root: Element

    /// What went wrong parsing.
    struct ParseError: Error, CustomStringConvertible {
        var description: String
    }

    /// Parses `text`; throws when it is not well-formed.
    init(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard
            let reader = bytes.withUnsafeBufferPointer({ b in
                b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: b.count) {
                    xmlReaderForMemory(
                        $0, Int32(b.count), "page.html", "UTF-8", Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue))
                }
            })
        else { throw ParseError(description: "cannot create a reader") }
        defer { xmlFreeTextReader(reader) }
        var stack: [Element] = []
        var top: Element?
        func string(_ p: UnsafePointer<xmlChar>?) -> String { p.map { String(cString: $0) } ?? "" }
        while true {
            let r = xmlTextReaderRead(reader)
            if r == 0 { break }
            guard r == 1 else { throw ParseError(description: "not well-formed XML near line \(xmlTextReaderGetParserLineNumber(reader))") }
            switch Int32(xmlTextReaderNodeType(reader)) {
            case Int32(XML_READER_TYPE_ELEMENT.rawValue):
                let e = Element(name: string(xmlTextReaderConstLocalName(reader)), namespace: string(xmlTextReaderConstNamespaceUri(reader)))
                let empty = xmlTextReaderIsEmptyElement(reader) == 1
                while xmlTextReaderMoveToNextAttribute(reader) == 1 {
                    e.attributes[string(xmlTextReaderConstName(reader))] = string(xmlTextReaderConstValue(reader))
                }
                if let p = stack.last {
                    e.parent = p
                    p.children.append(e)
                } else {
                    top = e
                }
                if !empty { stack.append(e) }
            case Int32(XML_READER_TYPE_END_ELEMENT.rawValue):
                stack.removeLast()
            case Int32(XML_READER_TYPE_TEXT.rawValue), Int32(XML_READER_TYPE_CDATA.rawValue), Int32(XML_READER_TYPE_SIGNIFICANT_WHITESPACE.rawValue):
                stack.last?.text += string(xmlTextReaderConstValue(reader))
            default:
                break
            }
        }
        guard let top, stack.isEmpty else { throw ParseError(description: "no root element or unclosed elements") }
        root = top
    }

    /// Every element named `name` (any namespace).
    func all(_ name: String) -> [Element] { root.descendants.filter { $0.name == name } }

    /// Every element with class word `c`.
    func withClass(_ c: String) -> [Element] { root.descendants.filter { $0.classes.contains(c) } }
}
