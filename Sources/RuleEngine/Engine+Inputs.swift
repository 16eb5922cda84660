import MobilityModel
import RuleLanguage

extension Engine {
    // MARK: Inputs

    /// Sets a user's home time zone and care teams (from the retained profile; the engine keeps
    /// the teams only to persist them, see ``careTeams(of:)``).
    package mutating func setProfile(user: String, calendar: LocalCalendar, careTeams: [String] = []) {
        withUser(user) { st in
            st.calendar = calendar
            st.hasProfile = true
            st.careTeams = careTeams
            st.clearCaches()
        }
    }

    /// Ingests one validated sample. Per-sample rules run at once; daily rules wait for the day to close.
    @discardableResult
    package mutating func ingest(_ s: Sample, user: String, now: Timestamp, into out: inout [EngineOutput]) -> IngestOutcome {
        ingest(s, user: user, now: now, future: now, into: &out)
    }

    /// Ingests one sample judged against two clocks: `now` for lateness, `future` (nil: none) for
    /// the clock-skew guard. In event mode the user's clock may stay behind a sample it holds
    /// (``EventClock``) while the daemon's wall clock bounds the future.
    @discardableResult
    package mutating func ingest(_ s: Sample, user: String, now: Timestamp, future: Timestamp?, into out: inout [EngineOutput]) -> IngestOutcome {
        if let future, s.end.milliseconds > future.milliseconds + configuration.maxFutureSeconds * 1000 {
            return .rejected(Rejection(.inFuture, "sample ends at \(s.end), more than \(configuration.maxFutureSeconds) s after now (\(future))", itemID: s.id))
        }
        if s.end.milliseconds < now.milliseconds - configuration.allowedLatenessSeconds * 1000 {
            return .rejected(
                Rejection(.tooLate, "sample ends at \(s.end), more than \(configuration.allowedLatenessSeconds / 86_400) d before now (\(now))", itemID: s.id))
        }
        let rules: DayCloser? = sampleMask & (1 << UInt64(s.metric.rawValue)) != 0 ? closer : nil
        let k = slot(user, create: true)!
        if !states[k].hasProfile && states[k].lastClosedDay == nil { adoptZone(of: s, k) }
        // A static function on the state in place: a closure here would copy the sample.
        let outcome = Engine.ingest(s, into: &states[k], rules: rules, ev: &evaluator, out: &out)
        markTouched(k)
        return outcome
    }

    /// A user without a profile takes the zone of the first sample that names one (its IANA zone,
    /// else the fixed UTC offset it was written with), while none of the user's days has closed:
    /// the user's days then close at the user's own local midnights, not at UTC's. A phone in Los
    /// Angeles writing its evening samples after UTC midnight would otherwise see each day
    /// evaluated before its evening arrived, so that how the phone batched its samples decided
    /// which days an alert saw. (A fixed offset is an hour off across a DST change: within the
    /// grace. A sample whose offset the calendar already has at its time changes nothing, so a
    /// configured default zone keeps its DST rules.) A profile, when it comes, wins.
    private mutating func adoptZone(of s: Sample, _ k: Int) {
        guard states[k].calendar == configuration.defaultCalendar else { return }
        // A `Z` timestamp names no zone (the home zone decides its day); an offset the calendar
        // already has at that instant: the calendar, with its DST rules, fits.
        if s.timeZone == nil && (s.utcOffset == 0 || Int64(s.utcOffset) == states[k].calendar.offset(at: s.end)) { return }
        let zone = s.timeZone.flatMap(LocalCalendar.cached) ?? LocalCalendar.cached(utcOffsetSeconds: Int(s.utcOffset))
        guard let cal = zone, cal != states[k].calendar else { return }
        states[k].calendar = cal
        states[k].clearCaches()
    }

    private static func ingest(
        _ s: Sample, into st: inout UserState, rules: DayCloser?,
        ev: inout Evaluator, out: inout [EngineOutput]
    ) -> IngestOutcome {
        let day = s.localDay(default: st.calendar)
        if let folded = st.lastFoldedDay, day <= folded {
            // Only reachable when the clock went backwards: the day is final.
            return .rejected(Rejection(.tooLate, "sample's day \(CivilDate(dayNumber: day)) is past the allowed lateness", itemID: s.id))
        }
        let id = SampleID(s.id)
        if st.locate(id) != nil { return .duplicate }
        var outcome = IngestOutcome.accepted
        if !s.metadata.isEmpty, let syncID = s.syncIdentifier {
            let sync = SampleID(syncID), version = s.syncVersion ?? 0
            if let k = st.syncIndex.firstIndex(where: { $0.sync == sync }) {
                if version <= st.syncIndex[k].version { return .stale }
                Engine.remove(id: st.syncIndex[k].id, from: &st)
                st.syncIndex[k] = SyncEntry(sync: sync, version: version, id: id)
                outcome = .superseded
            } else {
                st.syncIndex.append(SyncEntry(sync: sync, version: version, id: id))
            }
        }
        if !st.tombstones.isEmpty, st.isTombstoned(id) { return .deleted }
        st.append(StoredValue(id: id, metric: s.metric, value: s.value, end: s.end, provenance: s.provenance), day: day)
        st.noteDay(day)
        if let closed = st.lastClosedDay, day <= closed { st.revisedDays.insert(day) }
        if let rules { Engine.runSampleRules(rules, s, day: day, state: &st, ev: &ev, into: &out) }
        return outcome
    }

    static func remove(id: SampleID, from st: inout UserState) {
        guard let (i, j) = st.locate(id) else { return }
        st.removeValue(day: i, at: j)
        let day = st.openDays[i].day
        if let closed = st.lastClosedDay, day <= closed { st.revisedDays.insert(day) }
    }

    /// Retracts samples by id (HealthKit deletions) and remembers every id as a ``Tombstone``
    /// for the allowed lateness, so that a sample that arrives after its deletion (reordered
    /// across a failover, or re-sent) is dropped instead of coming back. `now` is the user's
    /// clock (nil: none yet); a tombstone is forgotten when the later of its day and the user's
    /// latest day with data folds. Returns how
    /// many held samples were removed.
    @discardableResult
    package mutating func delete(ids: [String], user: String, now: Timestamp? = nil) -> Int {
        let limit = configuration.maxTombstones
        return withUser(user) { st in
            var n = 0
            // The later of the clock's day and the latest day with data: in event mode the clock
            // can stay behind samples it holds (a jump not yet confirmed after a gap).
            let latest = max(st.lastClosedDay ?? .min, st.openDays.last?.day ?? .min, now.map { st.calendar.day(of: $0) } ?? .min)
            let day = latest == .min ? Tombstone.unstamped : latest
            let deleted = ids.map(SampleID.init)
            // The held ones go in one pass over the open values: a scan and a shift per id cost
            // ids × values (a flood of 1 000-id deletions held a shard for a minute).
            var held = Set<SampleID>()
            for id in deleted where st.mightHold(id) { held.insert(id) }
            if !held.isEmpty {
                let (days, removed) = st.removeValues(ids: held)
                n = removed
                for i in days {
                    let d = st.openDays[i].day
                    if let closed = st.lastClosedDay, d <= closed { st.revisedDays.insert(d) }
                }
            }
            st.addTombstones(deleted, day: day, limit: limit)
            return n
        }
    }

    /// Records a clinical event or annotation (replacing one with the same id) from trusted input
    /// (rule tests): no bounds on its date or on the user's number of entries.
    package mutating func record(event e: TimelineEvent, user: String) {
        store(e, user: user, history: e.firstDay)
    }

    /// How far past the user's today an annotation reported ahead may end (days).
    package static let maxAnnotationReachDays: DayNumber = 366

    /// Records a timeline entry from the wire, or refuses it (nothing changes then).
    ///
    /// - `now`: the user's clock (the wall clock, or in event mode the user's event clock; nil
    ///   before the user's first sample in a replay). An entry may start at most
    ///   `maxEventAgeDays` before its local today.
    /// - `latest`: the latest instant the input can vouch for (the daemon's wall clock; nil in a
    ///   replay, which has none). An entry may not start after its local today, with the
    ///   clock-skew guard, and an annotation may end at most ``maxAnnotationReachDays`` after
    ///   the later of its start and that today.
    ///
    /// An entry dated after the samples seen so far (a phone that syncs its samples after the
    /// injury was entered, a clinician who records it the same day) is kept: the days it bounds
    /// have not been evaluated yet. Every date lies in 1900–2099, and a new id must fit under
    /// `maxTimelineEntries`.
    ///
    /// An accepted entry can cost only bounded work: it moves the user's first day back at most
    /// to the first day a sample could still reach, and a clinical event republishes the series
    /// only of days the engine still holds (the rules' look-back plus the allowed lateness).
    package mutating func record(event e: TimelineEvent, user: String, now: Timestamp?, latest: Timestamp?) -> Rejection? {
        let st = slots[user].map { states[$0] }
        let cal = st?.calendar ?? configuration.defaultCalendar
        func refuse(_ why: String) -> Rejection {
            let range =
                e.firstDay == e.lastDay
                ? "\(CivilDate(dayNumber: e.firstDay))"
                : "\(CivilDate(dayNumber: e.firstDay))..\(CivilDate(dayNumber: e.lastDay))"
            return Rejection(.dateOutOfRange, "entry dated \(range) " + why, itemID: e.id)
        }
        let calendarRange = CivilDate(year: 1900, month: 1, day: 1).dayNumber...CivilDate(year: 2099, month: 12, day: 31).dayNumber
        guard calendarRange.contains(e.firstDay), calendarRange.contains(e.lastDay) else { return refuse("is outside the years 1900–2099") }
        var reachFrom = e.firstDay
        if let latest {
            let today = cal.day(of: latest.adding(seconds: configuration.maxFutureSeconds))
            if e.firstDay > today { return refuse("starts after today (\(CivilDate(dayNumber: today)))") }
            reachFrom = today
        }
        // An annotation may be reported at its start with its planned end (a heat-wave
        // warning, a trip), up to a year ahead.
        if e.lastDay > reachFrom + Engine.maxAnnotationReachDays {
            return refuse(
                "ends more than \(Engine.maxAnnotationReachDays) d after \(latest == nil ? "its start" : "today (\(CivilDate(dayNumber: reachFrom)))")")
        }
        var history: DayNumber?
        if let now {
            let earliest = cal.day(of: now) - DayNumber(configuration.maxEventAgeDays)
            if e.firstDay < earliest {
                return refuse("starts more than \(configuration.maxEventAgeDays) d before the user's today (before \(CivilDate(dayNumber: earliest)))")
            }
            history = max(e.firstDay, cal.day(of: now.adding(seconds: -configuration.allowedLatenessSeconds)) - 1)
        }
        if let st, st.events[e.id] == nil, st.events.count >= configuration.maxTimelineEntries {
            return Rejection(.tooManyEntries, "the user holds \(st.events.count) timeline entries, the limit; replace one by its id", itemID: e.id)
        }
        store(e, user: user, history: history)
        return nil
    }

    /// Stores an entry. `history`: the first day it makes the user's history reach (nil: none).
    ///
    /// An entry that changes what closed days saw (a new or moved entry dated on or before the
    /// last closed day) marks those days revised: their series are republished and the alert
    /// states re-evaluated from the first of them (``EngineConfiguration/revisionDays``). A
    /// re-sent identical entry changes nothing.
    private mutating func store(_ e: TimelineEvent, user: String, history: DayNumber?) {
        let held = heldDays, revisionDays = configuration.revisionDays
        withUser(user) { st in
            let previous = st.events.updateValue(e, forKey: e.id)
            if previous == e { return }
            if let history { st.noteDay(history) }
            st.rebuildBoundaries()
            // Days before the held history have no data to recompute (retention may have dropped
            // it): their series stay as published, with or without retention.
            st.reviseDays(
                from: min(e.firstDay, previous?.firstDay ?? e.firstDay), segments: e.category == .clinical || previous?.category == .clinical,
                held: held, revisionDays: revisionDays)
        }
    }
}
