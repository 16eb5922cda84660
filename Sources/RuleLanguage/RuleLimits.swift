/// What one rule file may cost the checker and the engine. Each limit has a diagnostic; none is
/// configurable, so a file that checks with `mobilityctl check` loads in any `mobilityd`.
/// Documented in `docs/rule-language.md`, "Limits".
package enum RuleLimits {
    /// The largest rule file, in bytes (1 MiB).
    package static let maxFileBytes = 1 << 20
    /// Diagnostics kept per file; past it one `too-many-diagnostics` note says how many more there were.
    package static let maxDiagnosticsPerFile = 100
    /// How deeply parentheses, function calls, `not` and unary `-` may nest in one expression.
    package static let maxNesting = 64
    /// Operators (binary, unary) and calls in one expression.
    package static let maxOperators = 256
    /// How deeply an expression may nest once the series and lets it uses are expanded: the
    /// evaluator's recursion depth.
    package static let maxEvaluationDepth = 512
    /// Values one alert or series may compute for one user's day close (see ``Checker`` cost).
    package static let maxCostPerDay = 1_000_000
}
