import MobilityModel
import MobilityWire
import RuleEngine
import RuleLanguage

/// How the engine's "now" advances.
package enum ClockMode: String, Sendable {
    /// From the wall clock: the caller passes the current time and calls ``Ingestor/tick(now:into:)``.
    case wall
    /// From the data: each user's clock is the latest sample end that user's traffic confirms
    /// (``EventClock``), so a replay runs as fast as it is fed and gives the same alerts however
    /// users are sharded.
    case event
}

/// Counters of what the ingestor did (exported as metrics by the daemon).
package struct IngestCounters: Sendable, Equatable {
    /// Messages handled.
    package var messages = 0
    /// Samples accepted into a user's days.
    package var samplesAccepted = 0
    /// Samples ignored as already held (same id).
    package var duplicates = 0
    /// Samples ignored because a higher sync version is held.
    package var superseded = 0
    /// Samples ignored because an equal or higher sync version is held.
    package var stale = 0
    /// Samples retracted by deletions.
    package var deletions = 0
    /// Samples dropped because their id had been deleted before they arrived (a tombstone).
    package var deletedBeforeArrival = 0
    /// Timeline entries accepted (recorded, replaced or retracted).
    package var events = 0
    /// Rejections by reason.
    package var rejected: [RejectionReason: Int] = [:]
    /// Zero counters.
    package init() {}
}

/// Routes inbound messages (topic + payload, exactly as on the wire) into an engine.
///
/// Shared by `mobilityctl replay` and the daemon's shards, so both give the same alerts for the
/// same traffic.
package struct Ingestor: Sendable {
    /// The engine.
    package var engine: Engine
    /// The topic layout.
    package let layout: TopicLayout
    /// The payload decoder with its limits.
    package var decoder: WireDecoder
    /// How time advances.
    package let clock: ClockMode
    /// What happened so far.
    package private(set) var counters = IngestCounters()
    /// Per-user event clocks (event mode).
    package private(set) var clocks: [String: EventClock] = [:]
    /// What confirms a jump of a user's event clock.
    package var clockPolicy = EventClockPolicy()
    /// Event mode: also refuse samples and entries after the wall clock passed to ``handle``
    /// (plus the engine's clock-skew guard), as the daemon does; a replay has no wall clock.
    package var boundedByWallClock = false
    /// A user's event clock (event mode): the confirmed time; see ``clocks`` for the pending claims.
    package func eventNow(_ user: String) -> Timestamp? { clocks[user]?.now }
    /// The id of the last sample (accepted or rejected with its id) of the message just handled;
    /// nil when it was not a `samples` message or named no sample id (for commit acknowledgements:
    /// the caller notes it per user, so the ingestor keeps no dictionary of its own).
    package private(set) var lastMessageSampleID: String?
    /// Whether ``lastMessageSampleID`` is kept (the daemon's acknowledgements need it; a replay does not).
    package var tracksLastSampleID = true
    /// What the message being handled added (event mode), which moves the user's clock: the
    /// latest end (ms) of its new samples within a step of the clock, the latest beyond, and the
    /// ends beyond (rare: a sync of several days or a jump; kept between messages so that its
    /// storage is reused), each no later than `added.latest` (the wall clock's bound).
    private var added = AddedSamples()

    struct AddedSamples: Sendable {
        var reach = Int64.max, latest = Int64.max
        var inStep = Int64.min, beyond = Int64.min
        var beyondEnds: [Int64] = []

        @inline(__always) mutating func note(_ e: Int64) {
            guard e <= latest else { return }
            if e <= reach {
                if e > inStep { inStep = e }
            } else {
                if e > beyond { beyond = e }
                beyondEnds.append(e)
            }
        }
    }

    package init(
        engine: Engine, layout: TopicLayout = TopicLayout(), decoder: WireDecoder = WireDecoder(), clock: ClockMode = .event,
        boundedByWallClock: Bool = false
    ) {
        self.engine = engine
        self.layout = layout
        self.decoder = decoder
        self.clock = clock
        self.boundedByWallClock = boundedByWallClock
    }

    mutating func reject(_ user: String?, _ topic: String, _ r: Rejection, into out: inout [EngineOutput]) {
        counters.rejected[r.reason, default: 0] += r.count
        out.append(.rejected(user: user, topic: topic, r))
    }

    /// Handles one message. `now` is the wall time in wall mode and ignored in event mode.
    package mutating func handle(topic: String, payload: [UInt8], now wall: Timestamp, into out: inout [EngineOutput]) {
        handle(topic: topic, parsed: layout.parse(topic), payload: payload, now: wall, into: &out)
    }

    /// Handles one message whose topic the caller has already parsed.
    package mutating func handle(topic: String, parsed: TopicLayout.Parsed, payload: [UInt8], now wall: Timestamp, into out: inout [EngineOutput]) {
        counters.messages += 1
        if lastMessageSampleID != nil { lastMessageSampleID = nil }
        let user: String, kind: TopicLayout.Inbound
        switch parsed {
        case .other: return
        case .invalidUser(let u):
            reject(
                nil, topic,
                Rejection(
                    .invalidUser, "user id '\(u.prefix(80))' is not 1–64 characters of \(TopicLayout.userAlphabet) (no '.': it breaks NATS and RabbitMQ)"),
                into: &out)
            return
        case .inbound(let u, let k): (user, kind) = (u, k)
        }
        switch kind {
        case .samples:
            switch decoder.samples(payload, user: user) {
            case .failure(let r): reject(user, topic, r, into: &out)
            case .success(let items): ingest(samples: items, user: user, topic: topic, now: wall, into: &out)
            }
        case .events:
            switch decoder.events(payload, user: user) {
            case .failure(let r): reject(user, topic, r, into: &out)
            case .success(let items):
                for (k, item) in items.enumerated() {
                    switch item {
                    case .failure(let r): reject(user, topic, r, into: &out)
                    case .success(.retract(let id)):
                        if engine.retract(event: id, user: user) {
                            counters.events += 1
                        } else {
                            reject(
                                user, topic,
                                Rejection(.unknownEntry, "the user holds no timeline entry with this id", itemID: id, index: items.count > 1 ? k : nil),
                                into: &out)
                        }
                    case .success(.record(let e)):
                        // The user's clock bounds how old an entry may be; the wall clock, where
                        // there is one, how far ahead (a replay has none: the calendar's range).
                        // An entry dated after the user's latest sample is kept: a phone often
                        // syncs its samples after the injury was entered.
                        let latest: Timestamp? = clock == .wall || boundedByWallClock ? wall : nil
                        let now = clock == .wall ? wall : (clocks[user]?.now ?? latest)
                        if var r = engine.record(event: e, user: user, now: now, latest: latest) {
                            if items.count > 1 { r.index = k }
                            reject(user, topic, r, into: &out)
                        } else {
                            counters.events += 1
                        }
                    }
                }
            }
        case .deletions:
            switch decoder.deletions(payload) {
            case .failure(let r): reject(user, topic, r, into: &out)
            case .success(let ids):
                // The user's clock stamps the tombstones (event mode: nil before the first sample).
                counters.deletions += engine.delete(ids: ids, user: user, now: clock == .wall ? wall : clocks[user]?.now)
            }
        case .profile:
            if payload.isEmpty { return }  // a cleared retained profile
            switch decoder.userProfile(payload) {
            case .failure(let r): reject(user, topic, r, into: &out)
            case .success(let p): engine.setProfile(user: user, calendar: p.calendar, careTeams: p.careTeams)
            }
        }
    }

    /// Handles a `samples` message of `user` that the caller has already decoded (the replay
    /// decodes before it knows whether the line needs its slow path); counted as a message.
    package mutating func handle(
        decodedSamples decoded: Result<[WireDecoder.Item<Sample>], Rejection>, user: String, topic: @autoclosure () -> String, now wall: Timestamp,
        into out: inout [EngineOutput]
    ) {
        counters.messages += 1
        if lastMessageSampleID != nil { lastMessageSampleID = nil }
        switch decoded {
        case .failure(let r): reject(user, topic(), r, into: &out)
        case .success(let items): ingest(samples: items, user: user, topic: topic(), now: wall, into: &out)
        }
    }

    private mutating func ingest(
        samples items: [WireDecoder.Item<Sample>], user: String, topic: @autoclosure () -> String, now wall: Timestamp,
        into out: inout [EngineOutput]
    ) {
        var future: Timestamp? = wall
        var lateness = wall
        var before: Timestamp?
        // One hash of the user for both reading and moving the clock (a new user's starts empty);
        // nothing below changes `clocks` until the clock moves, so the index stays valid.
        var c: Dictionary<String, EventClock>.Index?
        if clock == .event {
            // Samples past the user's clock are judged by the wall clock in the daemon, else by none.
            future = boundedByWallClock ? wall : nil
            if let found = clocks.index(forKey: user) {
                c = found
            } else {
                clocks[user] = EventClock()
                c = clocks.index(forKey: user)!
            }
            before = clocks.values[c!].now
            added.reach = clocks.values[c!].reach(clockPolicy)
            added.latest = future.map { $0.milliseconds + engine.configuration.maxFutureSeconds * 1000 } ?? .max
            // Lateness is judged against what was known before the message: a sync or an export
            // spanning more than the allowed lateness is not late for its own first days. A
            // user's first message is judged against the start of its latest continuous run of
            // samples, so that an outlier years back is late rather than the first of years of
            // empty days.
            lateness = before ?? Ingestor.runStart(items, upTo: added.latest, step: clockPolicy.maxStepMs)
            added.inStep = .min
            added.beyond = .min
            if !added.beyondEnds.isEmpty { added.beyondEnds.removeAll(keepingCapacity: true) }
        }
        // The last id of the message, stored once after it (not once a sample).
        var lastID: String?
        defer { if tracksLastSampleID { lastMessageSampleID = lastID } }
        var late: Rejection?
        // By index into the array's buffer: `for (index, item) in items.enumerated()` copied each
        // item out of the array and destroyed the copy after it.
        items.withUnsafeBufferPointer { list in
            for index in list.indices {
                ingest(
                    list[index], index: index, count: list.count, user: user, topic: topic(), now: lateness, future: future, lastID: &lastID, late: &late,
                    into: &out)
            }
        }
        if var late {
            if late.count > 1 { late.detail = "\(late.count) samples of the message are too late; the first: \(late.detail)" }
            reject(user, topic(), late, into: &out)
        }
        if let c { engine.advance(user: user, to: moveClock(at: c, before: before), into: &out) }
    }

    /// Moves a user's event clock by the samples a message brought that the user's state did not
    /// hold (``added``): a re-sent message, all duplicates, neither moves, confirms nor refutes
    /// anything (a gateway re-sends after every lost connection). Returns the clock after it.
    private mutating func moveClock(at c: Dictionary<String, EventClock>.Index, before: Timestamp?) -> Timestamp {
        var inStep = added.inStep, beyond = added.beyond
        if beyond != .min, let before {
            (inStep, beyond) = Ingestor.chain(added.beyondEnds, from: max(inStep, before.milliseconds), upTo: added.latest, step: clockPolicy.maxStepMs)
        }
        guard inStep != .min || beyond != .min else { return clocks.values[c].now ?? Timestamp(milliseconds: .min / 2) }
        return clocks.values[c].observe(inStep: inStep, beyond: beyond, policy: clockPolicy) ?? Timestamp(milliseconds: .min / 2)
    }

    /// One decoded item of a samples message.
    @inline(__always)
    private mutating func ingest(
        _ item: borrowing WireDecoder.Item<Sample>, index: Int, count: Int, user: String, topic: @autoclosure () -> String, now: Timestamp,
        future: Timestamp?, lastID: inout String?, late: inout Rejection?, into out: inout [EngineOutput]
    ) {
        switch item {
        case .failure(let r):
            if let id = r.itemID { lastID = id }
            reject(user, topic(), r, into: &out)
        case .success(let s):
            lastID = s.id
            switch engine.ingest(s, user: user, now: now, future: future, into: &out) {
            case .accepted:
                counters.samplesAccepted += 1
                if clock == .event { added.note(s.end.milliseconds) }
            case .duplicate: counters.duplicates += 1
            case .superseded:
                counters.samplesAccepted += 1
                counters.superseded += 1
                if clock == .event { added.note(s.end.milliseconds) }
            case .stale: counters.stale += 1
            case .deleted: counters.deletedBeforeArrival += 1
            case .rejected(var r):
                if count > 1 { r.index = index }  // as the decoder's rejections of a batch
                guard r.reason == .tooLate else { return reject(user, topic(), r, into: &out) }
                // A message's late samples are one refusal, after the message: a gateway re-sending
                // the samples of days long closed (after an outage, its acknowledgements late)
                // would otherwise have mobilityd publish a refusal a sample.
                if late == nil { late = r } else { late!.count += 1 }
            }
        }
    }

    /// The start of a message's latest continuous run of samples: walking back from its latest
    /// end (no later than `latest`), the earliest end reached without a gap longer than `step`
    /// (`.min / 2`: no sample).
    static func runStart(_ items: [WireDecoder.Item<Sample>], upTo latest: Int64, step: Int64) -> Timestamp {
        var ends: [Int64] = []
        for case .success(let s) in items where s.end.milliseconds <= latest { ends.append(s.end.milliseconds) }
        guard !ends.isEmpty else { return Timestamp(milliseconds: .min / 2) }
        ends.sort(by: >)
        var t = ends[0]
        for e in ends.dropFirst() {
            guard t - e <= step else { break }
            t = e
        }
        return Timestamp(milliseconds: t)
    }

    /// The part of a message's sample ends that continues the user's clock without a gap: the
    /// ends after `start`, in time order, for as long as each lies within `step` of the one before
    /// (a sync of several days of continuous data moves the clock through its last sample, as the
    /// same samples one a message would). Returns the latest such end (`.min`: none) and the
    /// latest end after the first gap longer than a step (`.min`: none), which stays a claim
    /// (``EventClock``): one outlier sample a year ahead does not move the clock.
    static func chain(_ all: [Int64], from start: Int64, upTo latest: Int64, step: Int64) -> (inStep: Int64, beyond: Int64) {
        let ends = all.filter { $0 > start && $0 <= latest }.sorted()
        var t = start, k = 0
        while k < ends.count, ends[k] - t <= step {
            t = ends[k]
            k += 1
        }
        return (k == 0 ? (start == .min ? .min : start) : t, k < ends.count ? ends[ends.count - 1] : .min)
    }

    /// Handles a message whose payload of `size` bytes the transport did not even copy because it
    /// is over ``WireDecoder/maxPayloadBytes``: counted and rejected like one the decoder refused.
    package mutating func rejectOversized(topic: String, parsed: TopicLayout.Parsed, size: Int, into out: inout [EngineOutput]) {
        counters.messages += 1
        var user: String?
        if case .inbound(let u, _) = parsed { user = u }
        if case .other = parsed { return }
        reject(user, topic, Rejection(.payloadTooLarge, "payload of \(size) bytes exceeds the limit of \(decoder.maxPayloadBytes)"), into: &out)
    }

    /// Rejects a retained `samples`, `events` or `deletions` message (the daemon refuses those
    /// without reading them: the broker re-delivers a retained message on every reconnect, so a
    /// retained deletion or retraction would be applied again and again, after later corrections).
    package mutating func rejectRetained(topic: String, parsed: TopicLayout.Parsed, into out: inout [EngineOutput]) {
        guard case .inbound(let user, _) = parsed else { return }
        counters.messages += 1
        reject(
            user, topic,
            Rejection(
                .retainedInput,
                "inputs other than the profile must be published with retain off: the broker delivers a retained message again on every reconnect; clear this one by publishing an empty retained message on its topic"
            ), into: &out)
    }

    /// Makes room for `n` more users (before restoring them).
    package mutating func reserveUsers(_ n: Int) { engine.reserveUsers(n) }

    /// Restores a user from the state store: engine state and event clock (with its pending claims).
    package mutating func restore(user: String, state: consuming UserSnapshot?, eventNow: Timestamp?, claims: [Int64] = []) {
        if let state = state.take() { engine.restore(state) }
        if eventNow != nil || !claims.isEmpty { clocks[user] = EventClock(now: eventNow, claims: claims) }
    }

    /// Restores a user whose state ``Engine/preparer`` made (on the state store's load threads).
    package mutating func restore(user: String, prepared: consuming PreparedUser?, eventNow: Timestamp?, claims: [Int64] = []) {
        if let state = prepared.take() { engine.restore(state) }
        if eventNow != nil || !claims.isEmpty { clocks[user] = EventClock(now: eventNow, claims: claims) }
    }

    /// Closes each user's days through the day of their event clock (the end of a bounded input
    /// in event mode: see ``Replay/finish()``).
    package mutating func closeOpenDays(into out: inout [EngineOutput]) {
        for user in clockedUsers { closeOpenDays(of: user, into: &out) }
    }

    /// The users that have an event clock, in id order (the order ``closeOpenDays(into:)`` closes them in).
    package var clockedUsers: [String] { clocks.keys.sorted() }

    /// Closes one user's days through the day of the user's clock, after the end of a bounded input
    /// confirmed its pending claims (``EventClock/confirmClaims(within:)``, within the allowed
    /// lateness of each other: a gap followed by syncs at the end of an export is real data; an
    /// outlier far beyond them stays unconfirmed).
    package mutating func closeOpenDays(of user: String, into out: inout [EngineOutput]) {
        clocks[user]?.confirmClaims(within: engine.configuration.allowedLatenessSeconds * 1000)
        guard let now = clocks[user]?.now, let cal = engine.calendar(of: user) else { return }
        engine.advance(user: user, to: cal.startOfDay(cal.day(of: now) + 1).adding(seconds: engine.configuration.graceSeconds), into: &out)
    }

    /// Advances every user to the wall clock (wall mode).
    package mutating func tick(now: Timestamp, into out: inout [EngineOutput]) {
        engine.advance(to: now, into: &out)
    }
}
