/// A regular expression of a silence matcher (`=~`, `!~`), matched against the **whole** value
/// (anchored, as Alertmanager's matchers are) in time linear in the value's length: compiled once
/// to a Thompson NFA and run as a set of states (RE2's guarantee, which a backtracking engine
/// such as Swift's `Regex` lacks: `(a+)+b` against a long user id would stall a shard).
///
/// The syntax is RE2's common subset: literals, `\` escapes of the metacharacters, `\d \w \s`,
/// `.`, classes `[a-z_]` / `[^…]`, groups `(…)` / `(?:…)`, `|`, and `*`, `+`, `?`. A leading `^`
/// and a trailing `$` are accepted and redundant. Counted repetition (`{m,n}`), back-references,
/// look-around and flags are refused with a message.
package struct LabelPattern: Hashable, Sendable {
    /// The pattern as written.
    package let source: String
    private let program: [Instruction]

    /// The longest pattern accepted, in UTF-8 bytes.
    package static let maxBytes = 256
    /// The deepest nesting of groups accepted.
    static let maxDepth = 16

    /// A pattern that cannot be compiled: what is wrong, lower case.
    package struct SyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The message, e.g. `unbalanced ')' at offset 4`.
        package var description: String
    }

    fileprivate enum Instruction: Hashable, Sendable {
        case scalar(Unicode.Scalar)
        case any
        case set(ranges: [ClosedRange<UInt32>], negated: Bool)
        case split(Int, Int)
        case jump(Int)
        case match
    }

    fileprivate indirect enum Node {
        case empty
        case scalar(Unicode.Scalar)
        case any
        case set([ClosedRange<UInt32>], Bool)
        case sequence([Node])
        case either([Node])
        case star(Node), plus(Node), optional(Node)
    }

    /// Compiles `source`; throws a ``SyntaxError`` for a pattern outside the subset or over ``maxBytes``.
    package init(_ source: String) throws(SyntaxError) {
        guard source.utf8.count <= LabelPattern.maxBytes else {
            throw SyntaxError(description: "a regular expression is at most \(LabelPattern.maxBytes) bytes, got \(source.utf8.count)")
        }
        var parser = PatternParser(Array(source.unicodeScalars))
        let node = try parser.parseWhole()
        var program: [Instruction] = []
        LabelPattern.emit(node, into: &program)
        program.append(.match)
        self.source = source
        self.program = program
    }

    /// Equal when written the same.
    package static func == (a: LabelPattern, b: LabelPattern) -> Bool { a.source == b.source }
    /// Hashes the source, as `==` compares it.
    package func hash(into h: inout Hasher) { h.combine(source) }

    private static func emit(_ n: Node, into p: inout [Instruction]) {
        switch n {
        case .empty: break
        case .scalar(let s): p.append(.scalar(s))
        case .any: p.append(.any)
        case .set(let r, let neg): p.append(.set(ranges: r, negated: neg))
        case .sequence(let parts): for x in parts { emit(x, into: &p) }
        case .either(let alts):
            // split L1, L2; L1: a; jump end; L2: split …
            var jumps: [Int] = []
            for (k, alt) in alts.enumerated() {
                if k < alts.count - 1 {
                    let split = p.count
                    p.append(.split(0, 0))
                    emit(alt, into: &p)
                    jumps.append(p.count)
                    p.append(.jump(0))
                    p[split] = .split(split + 1, p.count)
                } else {
                    emit(alt, into: &p)
                }
            }
            for j in jumps { p[j] = .jump(p.count) }
        case .star(let x):
            let split = p.count
            p.append(.split(0, 0))
            emit(x, into: &p)
            p.append(.jump(split))
            p[split] = .split(split + 1, p.count)
        case .plus(let x):
            let start = p.count
            emit(x, into: &p)
            p.append(.split(start, p.count + 1))
        case .optional(let x):
            let split = p.count
            p.append(.split(0, 0))
            emit(x, into: &p)
            p[split] = .split(split + 1, p.count)
        }
    }

    /// Whether the whole of `value` matches (one pass over its scalars; two state lists).
    package func matches(_ value: String) -> Bool {
        let n = program.count
        var current: [Int] = [], next: [Int] = []
        current.reserveCapacity(n)
        next.reserveCapacity(n)
        var mark = [Int](repeating: -1, count: n)
        var step = 0
        func add(_ pc: Int, _ list: inout [Int], _ mark: inout [Int], _ step: Int) {
            if mark[pc] == step { return }
            mark[pc] = step
            switch program[pc] {
            case .jump(let t): add(t, &list, &mark, step)
            case .split(let a, let b):
                add(a, &list, &mark, step)
                add(b, &list, &mark, step)
            default: list.append(pc)
            }
        }
        add(0, &current, &mark, step)
        for c in value.unicodeScalars {
            step += 1
            next.removeAll(keepingCapacity: true)
            for pc in current {
                let taken: Bool
                switch program[pc] {
                case .scalar(let s): taken = s == c
                case .any: taken = true
                case .set(let ranges, let negated): taken = ranges.contains { $0.contains(c.value) } != negated
                default: taken = false
                }
                if taken { add(pc + 1, &next, &mark, step) }
            }
            if next.isEmpty { return false }
            swap(&current, &next)
        }
        return current.contains { program[$0] == .match }
    }
}

/// The recursive-descent parser of ``LabelPattern`` (alternation < sequence < repetition < atom).
private struct PatternParser {
    let s: [Unicode.Scalar]
    var i = 0
    var depth = 0
    init(_ s: [Unicode.Scalar]) { self.s = s }

    typealias Node = LabelPattern.Node
    func fail(_ m: String) -> LabelPattern.SyntaxError { LabelPattern.SyntaxError(description: m) }

    mutating func parseWhole() throws(LabelPattern.SyntaxError) -> Node {
        var end = s.count
        if i < end, s[0] == "^" { i = 1 }
        if end > i, s[end - 1] == "$", end < 2 || s[end - 2] != "\\" { end -= 1 }
        let n = try parseEither(end: end)
        guard i == end else { throw fail(s[i] == ")" ? "unbalanced ')' at offset \(i)" : "unexpected '\(s[i])' at offset \(i)") }
        return n
    }

    mutating func parseEither(end: Int) throws(LabelPattern.SyntaxError) -> Node {
        var alts = [try parseSequence(end: end)]
        while i < end, s[i] == "|" {
            i += 1
            alts.append(try parseSequence(end: end))
        }
        return alts.count == 1 ? alts[0] : .either(alts)
    }

    mutating func parseSequence(end: Int) throws(LabelPattern.SyntaxError) -> Node {
        var parts: [Node] = []
        while i < end, s[i] != "|", s[i] != ")" {
            var atom = try parseAtom(end: end)
            if i < end {
                switch s[i] {
                case "*": atom = .star(atom); i += 1
                case "+": atom = .plus(atom); i += 1
                case "?": atom = .optional(atom); i += 1
                case "{": throw fail("counted repetition '{m,n}' is not supported (offset \(i)); write the repetitions out or use * + ?")
                default: break
                }
                if i < end, "*+?{".unicodeScalars.contains(s[i]) {
                    throw fail("a repetition cannot follow a repetition (offset \(i)); lazy and possessive forms are not supported")
                }
            }
            parts.append(atom)
        }
        return parts.isEmpty ? .empty : parts.count == 1 ? parts[0] : .sequence(parts)
    }

    mutating func parseAtom(end: Int) throws(LabelPattern.SyntaxError) -> Node {
        let c = s[i]
        switch c {
        case "(":
            depth += 1
            guard depth <= LabelPattern.maxDepth else { throw fail("groups nest at most \(LabelPattern.maxDepth) deep") }
            i += 1
            if i + 1 < end, s[i] == "?" {
                guard s[i + 1] == ":" else { throw fail("only '(?:' groups are supported (offset \(i - 1)); no flags or look-around") }
                i += 2
            }
            let inner = try parseEither(end: end)
            guard i < end, s[i] == ")" else { throw fail("missing ')' for the group") }
            i += 1
            depth -= 1
            return inner
        case "*", "+", "?", "{": throw fail("nothing to repeat before '\(c)' at offset \(i)")
        case ".": i += 1; return .any
        case "[": return try parseSet(end: end)
        case "^", "$": throw fail("'\(c)' only at the start or end (offset \(i)): matchers are anchored already")
        case "\\":
            i += 1
            guard i < end else { throw fail("trailing '\\'") }
            let e = s[i]
            i += 1
            if let cls = PatternParser.shorthand(e) { return .set(cls.ranges, cls.negated) }
            guard PatternParser.escapable(e) else { throw fail("unsupported escape '\\\(e)' at offset \(i - 2)") }
            return .scalar(e)
        default:
            i += 1
            return .scalar(c)
        }
    }

    mutating func parseSet(end: Int) throws(LabelPattern.SyntaxError) -> Node {
        let open = i
        i += 1
        var negated = false
        if i < end, s[i] == "^" { negated = true; i += 1 }
        var ranges: [ClosedRange<UInt32>] = []
        var first = true
        while i < end, s[i] != "]" || first {
            first = false
            var lo: Unicode.Scalar = s[i]
            i += 1
            if lo == "\\" {
                guard i < end else { break }
                let e = s[i]
                i += 1
                if let cls = PatternParser.shorthand(e), !cls.negated { ranges += cls.ranges; continue }
                guard PatternParser.escapable(e) || e == "-" else { throw fail("unsupported escape '\\\(e)' in a class") }
                lo = e
            }
            if i + 1 < end, s[i] == "-", s[i + 1] != "]" {
                var hi = s[i + 1]
                i += 2
                if hi == "\\", i < end { hi = s[i]; i += 1 }
                guard lo.value <= hi.value else { throw fail("class range '\(lo)-\(hi)' is out of order") }
                ranges.append(lo.value...hi.value)
            } else {
                ranges.append(lo.value...lo.value)
            }
        }
        guard i < end, s[i] == "]" else { throw fail("missing ']' for the class at offset \(open)") }
        i += 1
        return .set(ranges, negated)
    }

    static func shorthand(_ e: Unicode.Scalar) -> (ranges: [ClosedRange<UInt32>], negated: Bool)? {
        let digit: [ClosedRange<UInt32>] = [48...57]
        let word: [ClosedRange<UInt32>] = [48...57, 65...90, 97...122, 95...95]
        let space: [ClosedRange<UInt32>] = [9...13, 32...32]
        switch e {
        case "d": return (digit, false)
        case "D": return (digit, true)
        case "w": return (word, false)
        case "W": return (word, true)
        case "s": return (space, false)
        case "S": return (space, true)
        default: return nil
        }
    }

    static func escapable(_ e: Unicode.Scalar) -> Bool { "\\.+*?()|[]{}^$-/".unicodeScalars.contains(e) }
}
