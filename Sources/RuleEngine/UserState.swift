import MobilityModel
import RuleLanguage

/// A sample id as the engine keeps it: a 64-bit hash of its UTF-8 bytes (8 bytes at a time,
/// multiply-xorshift per word, MurmurHash3's 64-bit finaliser; stable across runs and machines). Ids are used only to
/// recognise re-deliveries, deletions and superseded versions within the allowed lateness, where a
/// user has at most thousands of ids (a collision needs ~2^32 of them); 8 bytes instead of a heap
/// string (HealthKit UUIDs are 36 characters).
public struct SampleID: Hashable, Comparable, Sendable {
    /// The hash.
    public var rawValue: UInt64

    /// Wraps a stored hash.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// The id of a sample id string.
    public init(_ id: String) {
        var s = id
        rawValue = s.withUTF8 { SampleID.hash($0) }
    }

    /// The hash of UTF-8 bytes.
    public static func hash(_ b: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(b.count)
        guard let base = b.baseAddress else { return fmix(h) }
        let raw = UnsafeRawPointer(base)
        var i = 0
        while i + 8 <= b.count {
            h = (h ^ UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i, as: UInt64.self))) &* 0xBF58_476D_1CE4_E5B9
            h ^= h >> 31
            i += 8
        }
        if i < b.count {
            var w: UInt64 = 0
            var shift: UInt64 = 0
            while i < b.count { w |= UInt64(b[i]) << shift; shift += 8; i += 1 }
            h = (h ^ w) &* 0x94D0_49BB_1331_11EB
            h ^= h >> 29
        }
        return fmix(h)
    }

    @inline(__always) static func fmix(_ x: UInt64) -> UInt64 {
        var k = x
        k ^= k >> 33
        k = k &* 0xFF51_AFD7_ED55_8CCD
        k ^= k >> 33
        k = k &* 0xC4CE_B9FE_1A85_EC53
        k ^= k >> 33
        return k
    }

    /// Orders by hash (a tie-break only: the order means nothing else).
    public static func < (a: SampleID, b: SampleID) -> Bool { a.rawValue < b.rawValue }
}

/// One sample value, kept while its day is open to late data: 24 bytes (the sample's end, its
/// metric and its provenance share one word), because every user holds about a week of these.
public struct StoredValue: Hashable, Sendable {
    /// The sample's id, hashed.
    public var id: SampleID
    /// The value in SI units.
    public var value: Double
    /// The end (ms) shifted left by 8; below it the metric (7 bits) and the provenance (1 bit).
    /// Milliseconds up to ±2^55 fit: any four-digit year.
    private var tagged: Int64

    /// The sample's end (orders `last`).
    public var end: Timestamp { Timestamp(milliseconds: tagged >> 8) }
    /// What was measured.
    public var metric: MetricKind { MetricKind(rawValue: UInt8(truncatingIfNeeded: tagged) >> 1)! }
    /// Device-recorded or user-entered.
    public var provenance: Provenance { Provenance(rawValue: UInt8(truncatingIfNeeded: tagged) & 1)! }

    /// Creates a stored value.
    public init(id: SampleID, metric: MetricKind, value: Double, end: Timestamp, provenance: Provenance) {
        self.id = id
        self.value = value
        tagged = end.milliseconds << 8 | Int64(metric.rawValue) << 1 | Int64(provenance.rawValue)
    }

    /// Whether the value is of a metric, and of a provenance when one is given (one comparison of
    /// the tag byte, no enum decoding).
    @inline(__always) func matches(_ m: MetricKind, _ p: Provenance?) -> Bool {
        let tag = UInt8(truncatingIfNeeded: tagged)
        guard let p else { return tag >> 1 == m.rawValue }
        return tag == m.rawValue << 1 | p.rawValue
    }
}

/// A day that can still receive late samples: where its values are in the user's
/// `openValues` (all open days' values in one array, day after day) and what the state store
/// holds of it. 20 bytes.
public struct OpenDay: Hashable, Sendable {
    /// The local day.
    public var day: DayNumber
    /// Where the day's values start in `UserState.openValues`.
    public internal(set) var start: Int32
    /// How many values the day has (all metrics, in arrival order).
    public internal(set) var count: Int32
    /// The first value (day-relative index) changed since the state store last wrote the day;
    /// -1 when unchanged (the store rewrites from there on).
    var changedFrom: Int32 = 0
    /// How many values the state store holds for the day.
    public internal(set) var storedCount: Int32 = 0

    /// The first value index changed since the state store last wrote the day; nil when unchanged.
    public var dirtyFrom: Int? { changedFrom < 0 ? nil : Int(changedFrom) }
    /// Whether the store's copy is out of date.
    public var dirty: Bool { changedFrom >= 0 }
    /// The day's values' indices in `UserState.openValues`.
    public var range: Range<Int> { Int(start)..<Int(start + count) }

    /// Notes a change at value index `i` and after.
    @inline(__always) mutating func touch(from i: Int) {
        changedFrom = changedFrom < 0 ? Int32(i) : Swift.min(changedFrom, Int32(i))
    }
}

/// A day past the allowed lateness, folded into the values of the daily inputs it has (its raw
/// values can no longer change: a sample for it would be too late), as ``UserState/foldedDayList``
/// lists it and the state store writes it.
public struct FoldedDay: Hashable, Sendable {
    /// The local day.
    public var day: DayNumber
    /// Bit i: input i has a value.
    public var mask: UInt64
    /// The values, in input order.
    public var values: [Double]

    /// Creates a folded day.
    public init(day: DayNumber, mask: UInt64, values: [Double]) {
        self.day = day
        self.mask = mask
        self.values = values
    }
}

/// A run of consecutive folded days: rows `row..<row + count` of the folded table hold days
/// `day..<day + count`.
public struct FoldedRun: Hashable, Sendable {
    /// The run's first day.
    public var day: DayNumber
    /// The row of its first day.
    public var row: Int32
    /// How many days (rows) it has.
    public var count: Int32
}

/// HealthKit supersession: the newest version of a sync identifier and the sample holding it.
public struct SyncEntry: Hashable, Sendable {
    /// `SampleID` hash of the sync identifier.
    public var sync: SampleID
    /// `HKMetadataKeySyncVersion` of the sample held.
    public var version: Int64
    /// The sample holding that version.
    public var id: SampleID

    /// Creates an entry.
    public init(sync: SampleID, version: Int64, id: SampleID) {
        self.sync = sync
        self.version = version
        self.id = id
    }
}

/// Everything the engine knows about one user. Owned by one shard; never shared.
///
/// Memory is the product's sizing unit, so history is kept in two forms: days still open to late
/// data hold raw values; older days are folded into the daily-input values the rules read
/// (see docs/benchmarks.md for the arithmetic).
public struct UserState: Sendable {
    /// The user's id.
    public let user: String
    /// The user's home calendar (profile time zone, else the engine default).
    public var calendar: LocalCalendar
    /// Whether the calendar came from a profile message.
    public var hasProfile = false
    /// The first local day with any data or event; days before it are not evaluated.
    public var firstDay: DayNumber?
    /// The last day whose rules have been evaluated.
    public var lastClosedDay: DayNumber?
    /// Days open to late data, sorted by day.
    public internal(set) var openDays: [OpenDay] = []
    /// The open days' values, day after day (one allocation for the week of raw values a user
    /// holds, grown by an eighth at a time).
    public internal(set) var openValues: [StoredValue] = []
    /// The open days' daily inputs, `cacheWidth` a day (input index within the day's row):
    /// `notComputed` until computed, NaN when the day has none. Empty until a day close needs it.
    var inputCache: [Double] = []
    var cacheWidth = 0
    /// Folded days, all before the first open day, as a table: a row per day, a column per daily
    /// input that has a value on some folded day (bit i of `foldedColumns`: input i of
    /// `foldedInputs`, columns in input order), NaN where the day has none. Consecutive days are
    /// consecutive rows; `foldedRuns` says which day each run of rows starts at (a gap of a day
    /// or two between days with data is filled with empty rows, a longer one starts a run).
    /// With data every day that is 8 bytes per input per day, and one run.
    public internal(set) var foldedRuns: [FoldedRun] = []
    /// The inputs that have a column in the folded table.
    public internal(set) var foldedColumns: UInt64 = 0
    /// The folded table, row after row.
    public internal(set) var foldedValues: [Double] = []
    /// The daily inputs the folded values belong to (the program's when they were folded).
    public var foldedInputs: [DailyInput] = []
    /// HealthKit sync identifiers of open-day samples.
    public var syncIndex: [SyncEntry] = []
    /// Clinical events and annotations, by id.
    public var events: [String: TimelineEvent] = [:]
    /// Days of clinical events (segment boundaries), sorted.
    public var boundaries: [DayNumber] = []
    /// Alert rule names, in the rules' order (the engine's array, shared: one reference a user).
    public var alertNames: [String] = []
    /// Alert state per rule, aligned with `alertNames`: read by index on every evaluation, no
    /// hashing of rule names.
    public var alertStates: [AlertStateMachine] = []

    /// Alert state by rule name; rules never evaluated for the user are absent.
    public var alerts: [String: AlertStateMachine] {
        get {
            var d: [String: AlertStateMachine] = [:]
            for (n, sm) in zip(alertNames, alertStates) where sm != AlertStateMachine() { d[n] = sm }
            return d
        }
        set {
            alertNames = newValue.keys.sorted()
            alertStates = alertNames.map { newValue[$0]! }
        }
    }

    /// Closed days that received late data since they were last published.
    public var revisedDays: Set<DayNumber> = []
    /// Whether the engine has the user in its touched list.
    var touched = false
    /// Until this instant (ms) no further day of the user can close: the check that runs after
    /// every sample is one comparison instead of a calendar lookup. Not stored; `.min` = unknown.
    var closeCheckUntil: Int64 = .min
    /// A Bloom filter of the open days' sample ids (two bits each), so that a new sample is told
    /// from a re-delivery without scanning the days; `idFilterLoad` ids noted since it was sized.
    /// Not stored: rebuilt on restore and when it fills.
    var idFilter: [UInt64] = []
    var idFilterLoad = 0
    /// Days before this were folded since the state store last wrote the user: their rows go.
    public var foldedBefore: DayNumber?

    /// Re-aligns the alert states with a list of rule names: a rule keeps its state by name,
    /// a new rule starts inactive, a removed rule's state goes (Prometheus's CopyState on reload).
    public mutating func alignAlerts(to names: [String]) {
        if alertNames == names { alertNames = names; return }  // same names: share the engine's array
        // A linear search per name: a few rules, and comparing names is cheaper than hashing them.
        var states = [AlertStateMachine](repeating: AlertStateMachine(), count: names.count)
        for (k, n) in names.enumerated() {
            if let i = alertNames.firstIndex(of: n) { states[k] = alertStates[i] }
        }
        alertStates = states
        alertNames = names
    }

    /// Forgets what the state store has written (called after a successful commit).
    public mutating func markPersisted() {
        for i in openDays.indices where openDays[i].dirty {
            openDays[i].changedFrom = -1
            openDays[i].storedCount = openDays[i].count
        }
        foldedBefore = nil
    }

    /// The cache marker for "not computed yet" (a NaN with a payload; a day without a value is plain NaN).
    static let notComputed = Double(bitPattern: 0x7FF8_0000_0000_0BAD)

    /// Creates an empty state.
    public init(user: String, calendar: LocalCalendar) {
        self.user = user
        self.calendar = calendar
    }

    /// The number of sample values held raw (open days).
    public var openValueCount: Int { openValues.count }

    /// The values of open day `i`.
    public func values(ofOpenDay i: Int) -> ArraySlice<StoredValue> { openValues[openDays[i].range] }

    /// Every open day's values, an array each (for tests and tools; the engine reads slices).
    public var openDayValues: [[StoredValue]] { openDays.map { Array(openValues[$0.range]) } }

    /// Makes room for `n` more open values in one allocation (before restoring a user's days).
    public mutating func reserveOpenValues(_ n: Int) { openValues.reserveCapacity(openValues.count + n) }

    /// Appends a day's values read back from the state store (days in order; chunks of one day
    /// in order). Not a change, since the store holds them, unless `stored` is false (read from
    /// a format the store no longer writes: the next commit writes them).
    public mutating func restoreOpenDay(_ day: DayNumber, values: ArraySlice<StoredValue>, stored: Bool = true) {
        if openDays.last?.day != day {
            openDays.append(OpenDay(day: day, start: Int32(openValues.count), count: 0, changedFrom: stored ? -1 : 0, storedCount: 0))
            if !inputCache.isEmpty { inputCache.append(contentsOf: repeatElement(UserState.notComputed, count: cacheWidth)) }
        }
        openValues.append(contentsOf: values)
        openDays[openDays.count - 1].count += Int32(values.count)
        if stored { openDays[openDays.count - 1].storedCount += Int32(values.count) }
    }

    /// The index of an open day (the last few are checked first: most lookups are of recent days).
    @inline(__always)
    func openIndex(_ d: DayNumber) -> Int? {
        let n = openDays.count
        guard n > 0, d <= openDays[n - 1].day, d >= openDays[0].day else { return nil }
        if openDays[n - 1].day == d { return n - 1 }
        var lo = 0, hi = n - 1
        while lo < hi {
            let mid = (lo + hi) >> 1
            if openDays[mid].day < d { lo = mid + 1 } else { hi = mid }
        }
        return openDays[lo].day == d ? lo : nil
    }

    /// The folded table's width (columns per row).
    @inline(__always) var foldedWidth: Int { foldedColumns.nonzeroBitCount }
    /// The folded table's rows.
    var foldedRowCount: Int { foldedRuns.last.map { Int($0.row + $0.count) } ?? 0 }

    /// The folded-table row of day `d`, if the day is folded (the last run is checked first: it
    /// holds all days but those of old anchored windows).
    @inline(__always)
    func foldedRow(_ d: DayNumber) -> Int? {
        let n = foldedRuns.count
        guard n > 0 else { return nil }
        var k = n - 1
        if d < foldedRuns[k].day {
            var lo = 0, hi = k - 1  // the last run starting on or before d
            while lo < hi {
                let mid = (lo + hi + 1) >> 1
                if foldedRuns[mid].day <= d { lo = mid } else { hi = mid - 1 }
            }
            k = lo
            guard k >= 0, foldedRuns[k].day <= d else { return nil }
        }
        let r = foldedRuns[k], off = Int(d - r.day)
        return off < Int(r.count) ? Int(r.row) + off : nil
    }

    /// The last folded day, if any.
    public var lastFoldedDay: DayNumber? { foldedRuns.last.map { $0.day + DayNumber($0.count) - 1 } }

    /// The folded value of input `i` on day `d`: nil when the day is not folded, `.some(nil)` when folded without a value.
    @inline(__always)
    func folded(_ i: Int, _ d: DayNumber) -> Double?? {
        guard let row = foldedRow(d) else { return nil }
        guard i < 64, foldedColumns & (1 << UInt64(i)) != 0 else { return .some(nil) }
        let v = foldedValues[row * foldedWidth + (foldedColumns & ((1 << UInt64(i)) - 1)).nonzeroBitCount]
        return .some(v.isNaN ? nil : v)
    }

    /// Appends a folded day after the last one: `values` are the values of the inputs in `mask`,
    /// in input order. A day without values is not stored.
    public mutating func appendFoldedDay(_ d: DayNumber, mask: UInt64, values: UnsafeBufferPointer<Double>) {
        precondition(lastFoldedDay.map { d > $0 } ?? true, "folded days are appended in order")
        guard mask != 0 else { return }
        if mask & ~foldedColumns != 0 { widenFolded(to: foldedColumns | mask) }
        let w = foldedWidth
        let rows = foldedRowCount
        if let last = foldedRuns.last, case let gap = Int(d - last.day) - Int(last.count), UserState.fillsFoldedGap(gap, width: w) {
            foldedValues.growSlowly(for: (gap + 1) * w)
            for _ in 0..<(gap * w) { foldedValues.append(.nan) }
            foldedRuns[foldedRuns.count - 1].count += Int32(gap + 1)
        } else {
            if foldedRuns.isEmpty { foldedRuns.reserveCapacity(1) }
            foldedRuns.append(FoldedRun(day: d, row: Int32(rows), count: 1))
            foldedValues.growSlowly(for: w)
        }
        var cols = foldedColumns, k = 0
        while cols != 0 {
            let bit = cols & (~cols &+ 1)
            cols &= cols - 1
            if mask & bit != 0 { foldedValues.append(values[k]); k += 1 } else { foldedValues.append(.nan) }
        }
    }

    /// Whether a gap of `days` between folded days is filled with empty rows (else a run starts):
    /// when the rows cost no more than a run's header (16 bytes).
    @inline(__always) public static func fillsFoldedGap(_ days: Int, width: Int) -> Bool { days * width <= 2 }

    /// Makes room for a folded table of `rows` rows and `runs` runs with the given columns, so
    /// that appending its days allocates nothing more (restoring a state). The table must be empty.
    public mutating func reserveFolded(columns: UInt64, rows: Int, runs: Int) {
        precondition(foldedRuns.isEmpty, "reserveFolded on a table with days")
        foldedColumns = columns
        foldedValues.reserveCapacity(rows * columns.nonzeroBitCount)
        foldedRuns.reserveCapacity(runs)
    }

    /// Adds columns to the folded table (an input has its first folded value).
    private mutating func widenFolded(to columns: UInt64) {
        let old = foldedColumns, oldWidth = foldedWidth, rows = foldedRowCount
        var table: [Double] = []
        table.reserveCapacity(rows * columns.nonzeroBitCount)
        for r in 0..<rows {
            var cols = columns
            while cols != 0 {
                let bit = cols & (~cols &+ 1)
                cols &= cols - 1
                table.append(old & bit != 0 ? foldedValues[r * oldWidth + (old & (bit - 1)).nonzeroBitCount] : .nan)
            }
        }
        foldedValues = table
        foldedColumns = columns
    }

    /// Calls `body` with each folded day that has values: its day, mask and values in input order.
    public func forEachFoldedDay(_ body: (DayNumber, UInt64, UnsafeBufferPointer<Double>) throws -> Void) rethrows {
        let w = foldedWidth
        guard w > 0 else { return }
        try withUnsafeTemporaryAllocation(of: Double.self, capacity: w) { buf in
            for run in foldedRuns {
                for j in 0..<Int(run.count) {
                    let row = (Int(run.row) + j) * w
                    var cols = foldedColumns, mask: UInt64 = 0, k = 0, c = 0
                    while cols != 0 {
                        let bit = cols & (~cols &+ 1)
                        cols &= cols - 1
                        let v = foldedValues[row + c]
                        c += 1
                        if !v.isNaN { mask |= bit; buf[k] = v; k += 1 }
                    }
                    if mask != 0 { try body(run.day + DayNumber(j), mask, UnsafeBufferPointer(rebasing: buf[0..<k])) }
                }
            }
        }
    }

    /// The folded days that have values, in order (for the state store's tests and tools).
    public var foldedDayList: [FoldedDay] {
        var list: [FoldedDay] = []
        forEachFoldedDay { d, m, vs in list.append(FoldedDay(day: d, mask: m, values: Array(vs))) }
        return list
    }

    /// Drops the folded days `keep` rejects. The steady state (the oldest days leave, every later
    /// one stays) moves the rows down in place; anything else rebuilds the table.
    mutating func keepFoldedDays(where keep: (DayNumber) -> Bool) {
        guard !foldedRuns.isEmpty else { return }
        // The first row kept, and whether every row after it is kept too.
        var first: (run: Int, offset: Int)?
        var tailKept = true
        outer: for (k, run) in foldedRuns.enumerated() {
            for j in 0..<Int(run.count) where keep(run.day + DayNumber(j)) != (first != nil) {
                if first == nil { first = (k, j) } else { tailKept = false; break outer }
            }
        }
        guard let first else { foldedRuns = []; foldedValues = []; foldedColumns = 0; return }
        guard tailKept else { rebuildFolded(foldedDayList.filter { keep($0.day) }); return }
        guard first.run > 0 || first.offset > 0 else { return }
        let w = foldedWidth
        let dropped = Int(foldedRuns[first.run].row) + first.offset
        foldedRuns.removeFirst(first.run)
        foldedRuns[0].day += DayNumber(first.offset)
        foldedRuns[0].row += Int32(first.offset)
        foldedRuns[0].count -= Int32(first.offset)
        for k in foldedRuns.indices { foldedRuns[k].row -= Int32(dropped) }
        foldedValues.removeFirst(dropped * w)
    }

    /// Replaces the folded days.
    mutating func rebuildFolded(_ days: [FoldedDay]) {
        foldedRuns = []
        foldedValues = []
        foldedColumns = 0
        for f in days { f.values.withUnsafeBufferPointer { appendFoldedDay(f.day, mask: f.mask, values: $0) } }
    }

    /// Where a sample id is held: (open day index, value index within the day).
    func locate(_ id: SampleID) -> (Int, Int)? {
        guard mightHold(id) else { return nil }
        let at: Int? = openValues.withUnsafeBufferPointer { vs in
            var j = vs.count - 1
            while j >= 0 { if vs[j].id == id { return j }; j -= 1 }
            return nil
        }
        guard let at else { return nil }
        var i = openDays.count - 1
        while Int(openDays[i].start) > at { i -= 1 }
        return (i, at - Int(openDays[i].start))
    }

    /// Whether an id may be held by an open day (false: certainly not). Two bits per id in
    /// `idFilter`; an empty filter (a state just built or loaded) answers "maybe".
    @inline(__always) func mightHold(_ id: SampleID) -> Bool {
        guard !idFilter.isEmpty else { return !openDays.isEmpty }
        let (a, b) = UserState.filterBits(id, words: idFilter.count)
        return idFilter[a >> 6] & (1 << UInt64(a & 63)) != 0 && idFilter[b >> 6] & (1 << UInt64(b & 63)) != 0
    }

    /// The two bit positions of an id in a filter of `words` words (a power of two).
    @inline(__always) private static func filterBits(_ id: SampleID, words: Int) -> (Int, Int) {
        let mask = UInt64(words * 64 - 1)
        return (Int(id.rawValue & mask), Int((id.rawValue >> 32) & mask))
    }

    @inline(__always) private mutating func setFilterBits(_ id: SampleID) {
        let (a, b) = UserState.filterBits(id, words: idFilter.count)
        idFilter[a >> 6] |= 1 << UInt64(a & 63)
        idFilter[b >> 6] |= 1 << UInt64(b & 63)
    }

    /// Notes the id of a value just added to an open day.
    @inline(__always) mutating func noteID(_ id: SampleID) {
        idFilterLoad += 1
        // Rebuilt at 8 bits per live id, so that it never holds fewer than 4 per id noted (5 to
        // 15 % false positives, each costing a scan of the open values: a few ns a sample on
        // average); ids of folded or removed values leave with the rebuild.
        if idFilterLoad * 4 > idFilter.count * 64 { rebuildIDFilter(); return }
        setFilterBits(id)
    }

    /// Sizes the id filter for the open days' values and fills it.
    mutating func rebuildIDFilter() {
        let n = openValues.count
        var words = 2
        while words * 64 < n * 8 { words <<= 1 }
        if idFilter.count == words { for k in idFilter.indices { idFilter[k] = 0 } } else { idFilter = Array(repeating: 0, count: words) }
        for v in openValues { setFilterBits(v.id) }
        idFilterLoad = n
    }

    /// Adds a value to its open day (creating it in day order); returns the day's index.
    @discardableResult
    public mutating func append(_ v: StoredValue, day: DayNumber) -> Int {
        let i: Int
        if let o = openIndex(day) {
            i = o
        } else {
            var at = openDays.count
            while at > 0, openDays[at - 1].day > day { at -= 1 }
            let start = at < openDays.count ? openDays[at].start : Int32(openValues.count)
            openDays.insert(OpenDay(day: day, start: start, count: 0), at: at)
            if !inputCache.isEmpty {
                inputCache.growSlowly(for: cacheWidth)
                inputCache.insert(contentsOf: repeatElement(UserState.notComputed, count: cacheWidth), at: at * cacheWidth)
            }
            i = at
        }
        let end = Int(openDays[i].start + openDays[i].count)
        if end == openValues.count {
            openValues.appendGrowingSlowly(v)
        } else {
            // Late data for an earlier day: the later days' values move up by one.
            openValues.growSlowly(for: 1)
            openValues.insert(v, at: end)
            for k in (i + 1)..<openDays.count { openDays[k].start += 1 }
        }
        openDays[i].touch(from: Int(openDays[i].count))
        openDays[i].count += 1
        invalidateCache(day: i)
        noteID(v.id)
        return i
    }

    /// Removes value `j` of open day `i` (an emptied day stays, and folds to nothing, so that its
    /// stored rows are rewritten).
    mutating func removeValue(day i: Int, at j: Int) {
        openValues.remove(at: Int(openDays[i].start) + j)
        openDays[i].count -= 1
        for k in (i + 1)..<openDays.count { openDays[k].start -= 1 }
        openDays[i].touch(from: j)
        invalidateCache(day: i)
    }

    /// Removes the first `n` open days (folded), their values and cached inputs.
    mutating func removeFirstOpenDays(_ n: Int) {
        guard n > 0 else { return }
        let values = Int(openDays[n - 1].start + openDays[n - 1].count)
        openValues.removeFirst(values)
        if !inputCache.isEmpty { inputCache.removeFirst(n * cacheWidth) }
        openDays.removeFirst(n)
        for k in openDays.indices { openDays[k].start -= Int32(values) }
    }

    /// Forgets the cached inputs of open day `i` (its values changed).
    @inline(__always) mutating func invalidateCache(day i: Int) {
        guard !inputCache.isEmpty else { return }
        for k in (i * cacheWidth)..<((i + 1) * cacheWidth) { inputCache[k] = UserState.notComputed }
    }

    /// Re-expresses the folded values for another list of inputs: shared inputs keep their values,
    /// new ones have none, dropped ones are forgotten.
    mutating func remapFolded(to inputs: [DailyInput]) {
        if foldedRuns.isEmpty { foldedInputs = inputs; foldedValues = []; foldedColumns = 0; return }
        if foldedInputs == inputs { foldedInputs = inputs; return } // share the rules' array (one per user after a restore)
        guard inputs.count <= 64 else { rebuildFolded([]); foldedInputs = inputs; return }
        let old = foldedInputs
        let map: [Int?] = inputs.map { n in old.firstIndex(of: n) }
        var rebuilt: [FoldedDay] = []
        forEachFoldedDay { d, m, vs in
            var mask: UInt64 = 0, values: [Double] = []
            for (j, o) in map.enumerated() {
                guard let o, o < 64, m & (1 << UInt64(o)) != 0 else { continue }
                mask |= 1 << UInt64(j)
                values.append(vs[(m & ((1 << UInt64(o)) - 1)).nonzeroBitCount])
            }
            if mask != 0 { rebuilt.append(FoldedDay(day: d, mask: mask, values: values)) }
        }
        rebuildFolded(rebuilt)
        foldedInputs = inputs
    }

    /// Forgets every cached daily input (rules or calendar changed).
    mutating func clearCaches() {
        closeCheckUntil = .min
        inputCache = []
        cacheWidth = 0
    }

    mutating func noteDay(_ d: DayNumber) {
        if firstDay == nil || d < firstDay! { firstDay = d }
    }

    /// The latest event of a kind on or before a day.
    func latestEvent(_ kind: String, onOrBefore d: DayNumber) -> DayNumber? {
        var best: DayNumber?
        for e in events.values where e.kind == kind && e.category == .clinical && e.firstDay <= d {
            if best == nil || e.firstDay > best! { best = e.firstDay }
        }
        return best
    }

    /// The first day of the segment containing `d` (the latest clinical event on or before it).
    func segmentStart(_ d: DayNumber) -> DayNumber {
        var lo = DayNumber.min
        for b in boundaries where b <= d { lo = b }
        return lo
    }

    /// The first boundary after `d`, if any.
    func nextBoundary(after d: DayNumber) -> DayNumber? { boundaries.first { $0 > d } }

    /// Recomputes the segment boundaries from the clinical events (after a restore).
    public mutating func rebuildBoundaries() {
        boundaries = Array(Set(events.values.filter { $0.category == .clinical }.map(\.firstDay))).sorted()
    }

    /// Annotations overlapping a day range, as `kind first..last` strings, sorted.
    func annotations(from lo: DayNumber, to hi: DayNumber) -> [TimelineEvent] {
        events.values.filter { $0.category == .annotation && $0.firstDay <= hi && $0.lastDay >= lo }
            .sorted { ($0.firstDay, $0.kind, $0.id) < ($1.firstDay, $1.kind, $1.id) }
    }
}

extension Array {
    /// Appends, growing by an eighth (at least 8 elements) when full instead of doubling: for
    /// per-user arrays that grow a little every day, doubling leaves up to half of each one unused
    /// for good (a user's history stops growing at the rules' look-back). Growth stays amortised.
    @inline(__always) mutating func appendGrowingSlowly(_ x: Element) {
        growSlowly(for: 1)
        append(x)
    }

    /// Makes room for `n` more elements the same way (before an insertion).
    @inline(__always) mutating func growSlowly(for n: Int) {
        if count + n > capacity { reserveCapacity(count + Swift.max(n, 8, count >> 3)) }
    }
}

extension UserState {
    /// The heap bytes this state holds, by part (element capacity × stride, plus an estimated
    /// 48 bytes of array header and allocator overhead for each allocation), for sizing. Arrays
    /// shared with the rules (alert names, folded inputs) are not counted.
    /// `mobility-bench memory` prints it beside the process's resident growth.
    public var heapFootprint: KeyValuePairs<String, Int> {
        func bytes<T>(_ a: [T]) -> Int { a.capacity == 0 ? 0 : a.capacity * MemoryLayout<T>.stride + 48 }
        return [
            "state struct": MemoryLayout<UserState>.stride,
            "open days": bytes(openDays),
            "open values": bytes(openValues),
            "input cache": bytes(inputCache),
            "folded runs": bytes(foldedRuns),
            "folded values": bytes(foldedValues),
            "sync index": bytes(syncIndex),
            "id filter": bytes(idFilter),
            "alert states": bytes(alertStates),
            "boundaries": bytes(boundaries),
            "events, revised days": (events.isEmpty ? 0 : events.capacity * 64) + (revisedDays.isEmpty ? 0 : revisedDays.capacity * 4 + 48),
            "user id": user.utf8.count > 15 ? user.utf8.count + 48 : 0,
        ]
    }
}
