import RuleLanguage

/// libFuzzer entry: the lexer, parser and checker must survive any text and always terminate.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRules(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    let src = SourceFile(path: "fuzz.rules", text: text)
    let (_, diagnostics) = Checker.check([src])
    _ = DiagnosticRenderer(files: [src]).render(diagnostics)
    return 0
}
