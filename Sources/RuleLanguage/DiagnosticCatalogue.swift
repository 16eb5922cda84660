/// The catalogue of diagnostic ids, alphabetical. Each is stable and documented in
/// `docs/rule-language.md` (a test checks that the doc lists exactly these).
package enum DiagnosticID: String, CaseIterable, Hashable, Sendable {
    case argumentMismatch = "argument-mismatch"
    case doubledUnit = "doubled-unit"
    case duplicateClause = "duplicate-clause"
    case duplicateName = "duplicate-name"
    case expectedExpression = "expected-expression"
    case expectedToken = "expected-token"
    case expressionTooLong = "expression-too-long"
    case fileTooLarge = "file-too-large"
    case headlineTooLong = "headline-too-long"
    case incompleteReport = "incomplete-report"
    case inhibitionCycle = "inhibition-cycle"
    case invalidDuration = "invalid-duration"
    case invalidNumber = "invalid-number"
    case invalidTemplate = "invalid-template"
    case missingHeadline = "missing-headline"
    case missingWhen = "missing-when"
    case nestingTooDeep = "nesting-too-deep"
    case recursiveDefinition = "recursive-definition"
    case reservedLabel = "reserved-label"
    case ruleTooCostly = "rule-too-costly"
    case sampleContext = "sample-context"
    case tooManyDiagnostics = "too-many-diagnostics"
    case typeMismatch = "type-mismatch"
    case undefinedName = "undefined-name"
    case unexpectedCharacter = "unexpected-character"
    case unexpectedToken = "unexpected-token"
    case unitMismatch = "unit-mismatch"
    case unknownArgument = "unknown-argument"
    case unknownFunction = "unknown-function"
    case unknownSeverity = "unknown-severity"
    case unknownUnit = "unknown-unit"
    case unterminatedString = "unterminated-string"
    case unusedDefinition = "unused-definition"
}

/// Every message the lexer, parser and checker can report, alphabetical by case. Each case
/// knows its id and severity, so a call site cannot pair a message with the wrong id.
package enum RuleMessage: DiagnosticMessage, Hashable {
    /// `'f' takes 1 positional argument, found 2`.
    case arityMismatch(function: String, expected: String, plural: Bool, found: Int)
    /// A window given both `before:` and `after:`.
    case beforeAndAfter
    /// `a < b < c`.
    case chainedComparison
    /// `cannot add X to Y` / `cannot subtract X from Y`.
    case differentDimensions(op: String, left: String, right: String)
    /// A template value followed by its own unit: `{missing in d:.0f} days`.
    case doubledUnit(unit: String, in: String)
    /// An argument label given twice in one call.
    case duplicateArgument(String)
    /// A single clause (`when`, `for`, …) given twice in one alert.
    case duplicateClause(alert: String, keyword: String)
    /// A series or alert name defined twice.
    case duplicateDefinition(what: String, name: String)
    /// A panel or field given twice in the report: `'walking_speed' has more than one 'daily'`.
    case duplicateInReport(block: String, keyword: String)
    /// A label key given twice.
    case duplicateLabel(String)
    /// A `let` whose name is already a `let` or a series.
    case duplicateLet(String)
    /// A second `report` block in a rule set.
    case duplicateReport
    /// A duration outside 0…3650 days.
    case durationOutOfRange(after: String)
    /// A `during` window that is not a boolean.
    case duringNotBoolean(type: String)
    /// Not a clause keyword inside an alert.
    case expectedClause(found: String)
    /// A duration is not a constant time.
    case expectedDuration(after: String, found: String, notConstant: Bool)
    /// An expression was expected.
    case expectedExpression(found: String)
    /// A kind name was expected (`injury`, `heat_wave`).
    case expectedKind(clinical: Bool)
    /// A specific token was expected: `expected '=' after the series name, found …`.
    case expectedToken(what: String, found: String)
    /// Not `series`, `alert`, `event kinds` or `annotation kinds` at the top level.
    case expectedTopLevel(found: String)
    /// `on` followed by something other than `day` or `sample`.
    case expectedTrigger(found: String)
    /// More operators and calls in one expression than the limit.
    case expressionTooLong(limit: Int)
    /// A rule file over the size limit.
    case fileTooLarge(bytes: Int)
    /// A `where` filter that is not a boolean.
    case filterNotBoolean(type: String)
    /// A `shortfall` fit of fewer than 3 days.
    case fitTooShort(days: Int)
    /// A headline that can render longer than the limit with values of nominal width.
    case headlineTooLong(alert: String, kind: String?, width: Int, limit: Int)
    /// Alerts that inhibit each other in a cycle.
    case inhibitionCycle(through: String)
    /// `'method'` other than linear or nearest.
    case invalidMethod
    /// A `min:` that is not a whole number of days.
    case invalidMinDays
    /// A malformed number literal.
    case invalidNumber(String)
    /// A `source:` other than device, user_entered or any.
    case invalidSource
    /// A template format other than `:.Nf`.
    case invalidTemplateFormat(String, in: String)
    /// A `{…?…}` placeholder that is not `{NAME ? 'text' : 'text'}`.
    case malformedChoice(in: String)
    /// `'metadata'` with a key that is not a string.
    case metadataKeyNotString
    /// `'metadata'` outside an `on sample` alert.
    case metadataOutsideSample
    /// A bare metric where a daily number is needed.
    case metricNeedsAggregation(String)
    /// `min:` (or `fit_min:`) larger than the window.
    case minDaysExceedWindow(min: Int, days: Int, label: String = "min")
    /// An alert without any `headline`.
    case missingHeadline(alert: String)
    /// A report panel without a field it needs: `'six_minute_walk' needs a 'watch' series`.
    case missingReportField(panel: String, field: String)
    /// An alert without `when`.
    case missingWhen(alert: String)
    /// A percentile function without a metric as its first argument.
    case needsMetricArgument(function: String)
    /// An operator or function given an operand of the wrong type: `'not' needs a boolean, found …`.
    case needsOperand(op: String, needs: String, found: String)
    /// A series or alert whose expansion nests too deep (found by the cost walk).
    case nestingTooDeepExpanded(what: String, depth: Int, limit: Int)
    /// An expression whose expansion through series and lets nests too deep.
    case nestingTooDeepInExpansion(limit: Int)
    /// Parentheses, calls, `not` and `-` nested too deep in the source.
    case nestingTooDeepInSource(limit: Int)
    /// Comparing two values of different types.
    case notComparable(left: String, right: String)
    /// Comparing two numbers of different dimensions.
    case notComparableUnits(left: String, right: String)
    /// An ordering operator on values that are not numbers.
    case orderingNeedsNumbers(op: String, type: String)
    /// A window function whose operand uses fields of the current sample.
    case pastDaysUseSample(function: String)
    /// A percentile that is not a plain number.
    case percentileNotNumber
    /// A percentile outside 0…100.
    case percentileOutOfRange
    /// A series that depends on itself.
    case recursiveSeries(String)
    /// A report condition whose series is not a count.
    case reportConditionNotCount(series: String, type: String)
    /// A report series shown in a unit of another dimension.
    case reportUnitMismatch(series: String, type: String, unit: String)
    /// A label key the daemon sets itself (`rule`, `user`, `severity`).
    case reservedLabel(String)
    /// A series or alert too costly for one user's day.
    case ruleTooCostly(what: String, cost: Double, limit: Int)
    /// A sample field outside an `on sample` alert.
    case sampleFieldOutsideSample(String)
    /// An alert listing itself in `inhibited_by`.
    case selfInhibition(String)
    /// A series named like a metric.
    case seriesNamedLikeMetric(String)
    /// A series whose value is not a number.
    case seriesNotNumber(name: String, type: String)
    /// `starts_with` with operands that are not both strings.
    case startsWithNeedsStrings
    /// A template value shown in a unit of another dimension.
    case templateUnitMismatch(name: String, type: String, unit: String)
    /// More diagnostics in a file than the cap.
    case tooManyDiagnostics(more: Int)
    /// A `{` without its `}` in a template.
    case unclosedTemplateBrace(in: String)
    /// A name that is not a let, series, metric or sample field.
    case undefinedName(String)
    /// A run of characters that cannot start a token.
    case unexpectedCharacters(first: String, count: Int)
    /// A token that does not fit inside an alert.
    case unexpectedInAlert(found: String, alert: String)
    /// A token that does not fit inside the report or one of its panels.
    case unexpectedInReport(found: String, block: String)
    /// A unit where an expression was expected.
    case unexpectedUnit(String)
    /// An `inhibited_by` naming no alert.
    case unknownAlert(String)
    /// A named argument the function does not take.
    case unknownArgument(function: String, label: String)
    /// A function that does not exist.
    case unknownFunction(String)
    /// An undeclared clinical event or annotation kind.
    case unknownKind(clinical: Bool, name: String)
    /// A report naming a series that is not defined.
    case unknownReportSeries(String)
    /// An `on sample` type that is not a metric.
    case unknownSampleType(String)
    /// A severity other than info, warning or critical.
    case unknownSeverity(String)
    /// A name in a template that is not a let or series.
    case unknownTemplateName(String, in: String)
    /// A unit in a template that is not in the table.
    case unknownTemplateUnit(String, in: String)
    /// A unit that is not in the table.
    case unknownUnit(String)
    /// A string without its closing quote.
    case unterminatedString
    /// A `let` that nothing uses.
    case unusedLet(String)
    /// A `when` condition that is not a boolean.
    case whenNotBoolean(type: String)
    /// A window length that is not a whole number of days.
    case windowNotWholeDays(after: String)

    /// The stable id.
    package var diagnosticID: DiagnosticID {
        switch self {
        case .arityMismatch, .beforeAndAfter, .invalidMethod, .invalidMinDays, .invalidSource, .minDaysExceedWindow, .percentileOutOfRange,
            .fitTooShort:
            .argumentMismatch
        case .doubledUnit: .doubledUnit
        case .duplicateClause, .duplicateInReport: .duplicateClause
        case .duplicateArgument, .duplicateDefinition, .duplicateLabel, .duplicateLet, .duplicateReport, .seriesNamedLikeMetric: .duplicateName
        case .expectedExpression: .expectedExpression
        case .expectedToken, .expectedTrigger: .expectedToken
        case .expressionTooLong: .expressionTooLong
        case .fileTooLarge: .fileTooLarge
        case .headlineTooLong: .headlineTooLong
        case .missingReportField: .incompleteReport
        case .inhibitionCycle, .selfInhibition: .inhibitionCycle
        case .durationOutOfRange, .expectedDuration, .windowNotWholeDays: .invalidDuration
        case .invalidNumber: .invalidNumber
        case .invalidTemplateFormat, .malformedChoice, .unclosedTemplateBrace, .unknownTemplateName: .invalidTemplate
        case .missingHeadline: .missingHeadline
        case .missingWhen: .missingWhen
        case .nestingTooDeepExpanded, .nestingTooDeepInExpansion, .nestingTooDeepInSource: .nestingTooDeep
        case .recursiveSeries: .recursiveDefinition
        case .reservedLabel: .reservedLabel
        case .ruleTooCostly: .ruleTooCostly
        case .metadataOutsideSample, .pastDaysUseSample, .sampleFieldOutsideSample: .sampleContext
        case .tooManyDiagnostics: .tooManyDiagnostics
        case .expectedKind, .filterNotBoolean, .metadataKeyNotString, .metricNeedsAggregation, .needsMetricArgument, .needsOperand,
            .notComparable, .orderingNeedsNumbers, .percentileNotNumber, .reportConditionNotCount, .seriesNotNumber, .startsWithNeedsStrings,
            .whenNotBoolean, .duringNotBoolean:
            .typeMismatch
        case .undefinedName, .unknownAlert, .unknownKind, .unknownReportSeries, .unknownSampleType: .undefinedName
        case .unexpectedCharacters: .unexpectedCharacter
        case .chainedComparison, .expectedClause, .expectedTopLevel, .unexpectedInAlert, .unexpectedInReport, .unexpectedUnit: .unexpectedToken
        case .differentDimensions, .notComparableUnits, .reportUnitMismatch, .templateUnitMismatch: .unitMismatch
        case .unknownArgument: .unknownArgument
        case .unknownFunction: .unknownFunction
        case .unknownSeverity: .unknownSeverity
        case .unknownTemplateUnit, .unknownUnit: .unknownUnit
        case .unterminatedString: .unterminatedString
        case .unusedLet: .unusedDefinition
        }
    }

    /// Error, except for the unused `let` and the missing headline (warnings) and the cap (a note).
    package var severity: DiagnosticSeverity {
        switch self {
        case .missingHeadline, .unusedLet: .warning
        case .tooManyDiagnostics: .note
        default: .error
        }
    }

    /// The one-line, lower-case message without a trailing period.
    package var message: String {
        switch self {
        case .arityMismatch(let f, let expected, let plural, let found):
            "'\(f)' takes \(expected) positional argument\(plural ? "s" : ""), found \(found)"
        case .beforeAndAfter: "a window is either 'before:' or 'after:' an event, not both"
        case .chainedComparison: "comparisons cannot be chained; combine them with 'and'"
        case .differentDimensions(let op, let l, let r): "cannot \(op == "+" ? "add" : "subtract") \(r) \(op == "+" ? "to" : "from") \(l)"
        case .doubledUnit(let u, let what): "a value in the \(what) already shows its unit; remove the '\(u)' written after it"
        case .duplicateArgument(let l): "argument '\(l)' is given twice"
        case .duplicateClause(let alert, let kw): "alert '\(alert)' has more than one '\(kw)' clause"
        case .duplicateDefinition(let what, let n): "\(what) '\(n)' is already defined"
        case .duplicateInReport(let block, let kw): "\(block) has more than one '\(kw)'"
        case .duplicateLabel(let k): "label '\(k)' is given twice"
        case .duplicateReport: "a rule set has one report block; this is a second one"
        case .duplicateLet(let n): "'\(n)' is already defined"
        case .durationOutOfRange(let what): "duration after \(what) must be between 0 and 3650 d"
        case .duringNotBoolean(let t): "the monitoring window of 'during' must be a boolean, not a \(t)"
        case .expectedClause(let found): "expected a clause (when, during, for, let, severity, summary, …), found \(found)"
        case .expectedDuration(let what, let found, let notConstant):
            "expected a duration such as '7 d' after \(what), found a \(found)\(notConstant ? " that is not constant" : "")"
        case .expectedExpression(let found): "expected an expression, found \(found)"
        case .expectedKind(let clinical): "expected \(clinical ? "a clinical event kind such as injury" : "an annotation kind such as heat_wave")"
        case .expectedToken(let what, let found): "expected \(what), found \(found)"
        case .expectedTopLevel(let found): "expected 'series', 'alert', 'event kinds', 'annotation kinds' or 'report', found \(found)"
        case .expectedTrigger(let found): "expected 'day' or 'sample' after 'on', found '\(found)'"
        case .fitTooShort(let days): "'fit' needs at least 3 days (a line and one degree of freedom for its scatter), found \(days)"
        case .expressionTooLong(let limit): "expression has more than \(limit) operators"
        case .fileTooLarge(let bytes): "rule file is larger than \(Checker.grouped(Double(bytes))) bytes (1 MiB)"
        case .filterNotBoolean(let t): "the filter after 'where' must be a boolean, not a \(t)"
        case .headlineTooLong(let alert, let kind, let width, let limit):
            "the \(kind.map { $0 + " " } ?? "")headline of '\(alert)' can be \(width) characters long with its values, more than \(limit)"
        case .inhibitionCycle(let n): "alerts inhibit each other in a cycle through '\(n)'"
        case .invalidMethod: "'method' must be linear or nearest"
        case .invalidMinDays: "'min' must be a whole number of days with data, e.g. 'min: 4'"
        case .invalidNumber(let t): "invalid number '\(t)'"
        case .invalidSource: "'source' must be device, user_entered or any"
        case .invalidTemplateFormat(let f, let what): "invalid format '\(f)' in the \(what); use ':.Nf'"
        case .metadataKeyNotString: "'metadata' needs a string key"
        case .metadataOutsideSample: "'metadata' is only available in alerts with 'on sample'"
        case .metricNeedsAggregation(let m): "metric '\(m)' needs a daily aggregation, such as p95(\(m)) or mean(\(m))"
        case .minDaysExceedWindow(let m, let days, let label): "'\(label): \(m)' asks for more days than the \(days)-day window holds"
        case .malformedChoice(let what): "a choice in the \(what) is written '{NAME ? 'text' : 'text'}'"
        case .missingHeadline(let alert): "alert '\(alert)' has no headline; care staff are shown a generic one"
        case .missingReportField(let panel, let field): "'\(panel)' in the report needs a '\(field)' series"
        case .missingWhen(let alert): "alert '\(alert)' has no 'when' condition"
        case .needsMetricArgument(let f): "'\(f)' needs a metric such as walkingSpeed as its first argument"
        case .needsOperand(let op, let needs, let found): "'\(op)' needs \(needs), found \(found)"
        case .nestingTooDeepExpanded(let what, let d, let limit):
            "\(what) nests \(d) levels deep once the series and lets it uses are expanded, more than \(limit)"
        case .nestingTooDeepInExpansion(let limit): "expression nests more than \(limit) levels deep once the series and lets it uses are expanded"
        case .nestingTooDeepInSource(let limit): "expression nests more than \(limit) levels deep"
        case .notComparable(let l, let r), .notComparableUnits(let l, let r): "cannot compare \(l) with \(r)"
        case .orderingNeedsNumbers(let op, let t): "'\(op)' needs numbers; \(t) can only be compared with == or !="
        case .pastDaysUseSample(let f): "'\(f)' looks at past days and cannot use fields of the current sample"
        case .percentileNotNumber: "the percentile must be a plain number between 0 and 100"
        case .percentileOutOfRange: "the percentile must be between 0 and 100"
        case .recursiveSeries(let n): "series '\(n)' depends on itself"
        case .reportConditionNotCount(let n, let t): "condition series '\(n)' must be a count, not \(t)"
        case .reportUnitMismatch(let n, let t, let u): "cannot show series '\(n)' (\(t)) in \(u)"
        case .reservedLabel(let k): "label '\(k)' is reserved"
        case .ruleTooCostly(let what, let cost, let limit):
            "\(what) computes about \(Checker.grouped(cost)) values for one user's day, more than \(Checker.grouped(Double(limit)))"
        case .sampleFieldOutsideSample(let n): "'\(n)' is a sample field, only available in alerts with 'on sample'"
        case .selfInhibition(let n): "alert '\(n)' cannot inhibit itself"
        case .seriesNamedLikeMetric(let n): "series '\(n)' has the name of a metric"
        case .seriesNotNumber(let n, let t): "a series must be a number, but '\(n)' is a \(t)"
        case .startsWithNeedsStrings: "'starts_with' needs two strings"
        case .templateUnitMismatch(let n, let t, let u): "cannot show '\(n)' (\(t)) in \(u)"
        case .tooManyDiagnostics(let more): "too many diagnostics in this file; \(more) more not shown"
        case .unclosedTemplateBrace(let what): "unclosed '{' in the \(what)"
        case .undefinedName(let n): "undefined name '\(n)'"
        case .unexpectedCharacters(let first, let count):
            count == 1 ? "unexpected character '\(first)'" : "\(count) unexpected characters, starting with '\(first)'"
        case .unexpectedInAlert(let found, let alert): "unexpected \(found) in alert '\(alert)'"
        case .unexpectedInReport(let found, let block): "unexpected \(found) in \(block)"
        case .unexpectedUnit(let u): "unexpected unit '\(u)'"
        case .unknownAlert(let n): "no alert named '\(n)'"
        case .unknownArgument(let f, let l): "'\(f)' has no argument '\(l)'"
        case .unknownFunction(let f): "unknown function '\(f)'"
        case .unknownKind(let clinical, let k): "unknown \(clinical ? "clinical event" : "annotation") kind '\(k)'"
        case .unknownReportSeries(let n): "no series named '\(n)'"
        case .unknownSampleType(let m): "unknown sample type '\(m)'"
        case .unknownSeverity(let s): "unknown severity '\(s)'; expected info, warning or critical"
        case .unknownTemplateName(let n, let what): "unknown name '\(n)' in the \(what)"
        case .unknownTemplateUnit(let u, let what): "unknown unit '\(u)' in the \(what)"
        case .unknownUnit(let u): "unknown unit '\(u)'"
        case .unterminatedString: "unterminated string"
        case .unusedLet(let n): "'\(n)' is defined but not used (it is still shown as evidence)"
        case .whenNotBoolean(let t): "the condition of 'when' must be a boolean, not a \(t)"
        case .windowNotWholeDays(let what): "a window after \(what) must be a whole number of days, at least 1 d"
        }
    }
}

/// Every note a diagnostic can carry, alphabetical by case.
package enum RuleNote: Hashable, Sendable {
    /// How to declare a new kind.
    case declareKinds(clinical: Bool, name: String)
    /// A suggestion that has no exact place in the source to become a fix-it.
    case didYouMean(String)
    /// Why an expansion is deep.
    case eachDefinitionAddsDepth
    /// What counts as a nesting level.
    case eachLevelCounts
    /// Points at the first definition of a name defined twice.
    case firstDefinedHere
    /// A dimensionless number where a quantity was expected.
    case giveNumberUnit
    /// How a headline's length is bounded.
    case headlineWidths
    /// Which series a costly rule needs on many days.
    case seriesNeededOnDays(name: String, days: Int)
    /// How to shorten an expression.
    case splitExpression
    /// The labels a function takes.
    case takesArguments([String])
    /// How a function is called.
    case usage(String)
    /// Why windows over windows are costly.
    case windowsMultiply

    /// The note's text, lower-case without a trailing period.
    package var message: String {
        switch self {
        case .declareKinds(let clinical, let k): "declare new kinds with '\(clinical ? "event" : "annotation") kinds \(k)'"
        case .didYouMean(let s): "did you mean '\(s)'?"
        case .eachDefinitionAddsDepth: "each series or let used adds its own definition's depth"
        case .eachLevelCounts: "parentheses, function calls, 'not' and '-' each add a level"
        case .firstDefinedHere: "first defined here"
        case .giveNumberUnit: "give the number a unit, e.g. '0.1 m/s', '30 m', '25 %' or '7 d'"
        case .headlineWidths:
            "a value counts as 4 digits with its decimals and unit, a fallback its own length, a date 10, '{user}' 16; shorten the text or use fewer decimals"
        case .seriesNeededOnDays(let n, let days): "series '\(n)' is needed on \(Checker.grouped(Double(days))) days for each evaluated day"
        case .splitExpression: "split it into series or lets"
        case .takesArguments(let labels): "it takes: \(labels.joined(separator: ", "))"
        case .usage(let u): "usage: \(u)"
        case .windowsMultiply: "a window evaluates its operand once per day it covers, so windows over windowed series multiply"
        }
    }
}
