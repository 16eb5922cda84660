import MobilityModel
import StateStore

/// One commit's rows as column arrays, one statement per kind of row (`INSERT … SELECT * FROM
/// unnest($1::text[], …)`): a commit of ten thousand rows is a dozen statements in one pipeline.
/// Rows that would meet twice in one upsert (PostgreSQL refuses to update a row twice in one
/// statement) are reduced to the last, as the SQLite store's statement per row leaves them.
struct CommitBatch {
    let partitions: PartitionSet

    // users
    private var userIDs = PGArray(of: PGArray.text), userParts = PGArray(of: PGArray.int4), seqs = PGArray(of: PGArray.int8)
    private var eventNows = PGArray(of: PGArray.int8), heads = PGArray(of: PGArray.bytea), claims = PGArray(of: PGArray.bytea)
    // user_days
    private var foldedUsers = PGArray(of: PGArray.text), foldedBefore = PGArray(of: PGArray.int4)
    private var cutUsers = PGArray(of: PGArray.text), cutDays = PGArray(of: PGArray.int4), cutChunks = PGArray(of: PGArray.int4)
    private var chunkUsers = PGArray(of: PGArray.text), chunkDays = PGArray(of: PGArray.int4), chunkIndexes = PGArray(of: PGArray.int4)
    private var chunkData = PGArray(of: PGArray.bytea)
    // outbox
    private var topics = PGArray(of: PGArray.text), payloads = PGArray(of: PGArray.bytea), retains = PGArray(of: PGArray.bool)
    private var acked = PGArray(of: PGArray.int8)
    // history
    private var rowUsers = PGArray(of: PGArray.text), rowKinds = PGArray(of: PGArray.int4), rowKeys = PGArray(of: PGArray.text)
    private var rowDays = PGArray(of: PGArray.int4), rowValues = PGArray(of: PGArray.float8), rowPayloads = PGArray(of: PGArray.bytea)
    private var timelineUsers = PGArray(of: PGArray.text), timelineKeys = PGArray(of: PGArray.text)
    private var seriesNames = PGArray(of: PGArray.text), seriesUnits = PGArray(of: PGArray.text)
    private var pointUsers = PGArray(of: PGArray.text), pointDays = PGArray(of: PGArray.int4), pointSeries = PGArray(of: PGArray.text)
    private var pointValues = PGArray(of: PGArray.float8)
    // partitions
    private var streamParts = PGArray(of: PGArray.int4), streamSeqs = PGArray(of: PGArray.int8)

    init(partitions: PartitionSet) { self.partitions = partitions }

    mutating func add(users: [StateStore.UserRecord]) {
        var seen = Set<String>(minimumCapacity: users.count)
        for u in users.reversed() where seen.insert(u.user).inserted {
            userIDs.append(u.user)
            userParts.append(Int32(partitions.partition(of: u.user)))
            seqs.append(Int64(bitPattern: u.appliedSeq))
            if let e = u.eventNow { eventNows.append(e.milliseconds) } else { eventNows.appendNull() }
            if u.eventClaims.isEmpty { claims.appendNull() } else { claims.append(bytes: UserRows.encodeClaims(u.eventClaims)) }
            guard let s = u.state else {
                heads.appendNull()
                continue
            }
            heads.append(bytes: UserRows.head(s))
            if let before = s.foldedBefore {
                foldedUsers.append(u.user)
                foldedBefore.append(Int32(before))
            }
            UserRows.forEachChange(
                of: s,
                write: { day, chunk, bytes in
                    chunkUsers.append(u.user)
                    chunkDays.append(Int32(day))
                    chunkIndexes.append(Int32(chunk))
                    chunkData.append(bytes: bytes)
                },
                deleteFrom: { day, chunk in
                    cutUsers.append(u.user)
                    cutDays.append(Int32(day))
                    cutChunks.append(Int32(chunk))
                })
        }
    }

    mutating func add(outbox: [StateStore.OutboxItem]) {
        for o in outbox {
            topics.append(o.topic)
            payloads.append(bytes: o.payload)
            retains.append(o.retain)
        }
    }

    mutating func add(acknowledged: [Int64]) { for id in acknowledged { acked.append(id) } }

    /// Partitions' committed stream sequences (each owned: the fence holds their tokens).
    mutating func add(streamSequences: [Int: UInt64]) {
        for (k, seq) in streamSequences.sorted(by: { $0.key < $1.key }) {
            precondition(partitions.owned.contains(k), "a stream sequence of partition \(k), not owned")
            streamParts.append(Int32(k))
            streamSeqs.append(Int64(bitPattern: seq))
        }
    }

    /// A series point's key, and any other row's (a timeline entry's is its id alone: re-sent
    /// with other dates it replaces its row).
    private struct RowKey: Hashable {
        var user: String, kind: Int64, key: String, day: DayNumber
    }

    mutating func add(history: [HistoryRecord]) {
        guard !history.isEmpty else { return }
        var seen = Set<RowKey>(minimumCapacity: history.count)
        var units: [String: String] = [:]
        for r in history.reversed() {
            let key = RowKey(user: r.user, kind: r.kind.rawValue, key: r.key, day: r.kind == .timeline ? 0 : r.day)
            guard seen.insert(key).inserted else { continue }
            switch r.kind {
            case .series:
                if units[r.key] == nil { units[r.key] = String(decoding: r.payload, as: UTF8.self) }
                pointUsers.append(r.user)
                pointDays.append(Int32(r.day))
                pointSeries.append(r.key)
                pointValues.append(double: r.value)
                continue
            case .timeline:
                timelineUsers.append(r.user)
                timelineKeys.append(r.key)
                if r.payload.isEmpty { continue }  // a retraction: the row goes, none replaces it
            case .alert, .weekly: break
            }
            rowUsers.append(r.user)
            rowKinds.append(Int32(r.kind.rawValue))
            rowKeys.append(r.key)
            rowDays.append(Int32(r.day))
            rowValues.append(double: r.value)
            rowPayloads.append(bytes: r.payload)
        }
        for (name, unit) in units.sorted(by: { $0.key < $1.key }) {
            seriesNames.append(name)
            seriesUnits.append(unit)
        }
    }

    private static func parameters(_ arrays: PGArray...) -> PGParameters {
        var p = PGParameters()
        for a in arrays { p.array(a) }
        return p
    }

    /// The statements (none for an empty commit) and the index of the outbox insert, whose rows are the new ids.
    func statements() -> (steps: [(sql: String, parameters: PGParameters)], outbox: Int?) {
        var s: [(sql: String, parameters: PGParameters)] = []
        let p = CommitBatch.parameters
        if !userIDs.isEmpty {
            s.append((CommitSQL.upsertUsers, p(userIDs, userParts, seqs, eventNows, heads, claims)))
        }
        if !foldedUsers.isEmpty { s.append((CommitSQL.deleteFoldedDays, p(foldedUsers, foldedBefore))) }
        if !cutUsers.isEmpty { s.append((CommitSQL.deleteChunksFrom, p(cutUsers, cutDays, cutChunks))) }
        if !chunkUsers.isEmpty { s.append((CommitSQL.upsertChunks, p(chunkUsers, chunkDays, chunkIndexes, chunkData))) }
        var outboxStep: Int?
        if !topics.isEmpty {
            outboxStep = s.count
            s.append((CommitSQL.insertOutbox, p(topics, payloads, retains)))
        }
        if !acked.isEmpty { s.append((CommitSQL.deleteOutbox, p(acked))) }
        if !timelineUsers.isEmpty { s.append((CommitSQL.deleteTimelineRows, p(timelineUsers, timelineKeys))) }
        if !rowUsers.isEmpty { s.append((CommitSQL.upsertHistory, p(rowUsers, rowKinds, rowKeys, rowDays, rowValues, rowPayloads))) }
        if !seriesNames.isEmpty { s.append((CommitSQL.upsertSeries, p(seriesNames, seriesUnits))) }
        if !pointUsers.isEmpty { s.append((CommitSQL.upsertPoints, p(pointUsers, pointDays, pointSeries, pointValues))) }
        if !streamParts.isEmpty { s.append((CommitSQL.recordStreamSequences, p(streamParts, streamSeqs))) }
        return (s, outboxStep)
    }
}

/// The commit's statements.
enum CommitSQL {
    static let upsertUsers = """
        INSERT INTO users (user_id, partition, applied_seq, event_now, state, event_claims)
        SELECT * FROM unnest($1::text[], $2::integer[], $3::bigint[], $4::bigint[], $5::bytea[], $6::bytea[])
        ON CONFLICT (user_id) DO UPDATE SET partition = EXCLUDED.partition, applied_seq = EXCLUDED.applied_seq,
            event_now = EXCLUDED.event_now, state = EXCLUDED.state, event_claims = EXCLUDED.event_claims
        """
    static let deleteFoldedDays = """
        DELETE FROM user_days d USING unnest($1::text[], $2::integer[]) AS x(u, before) WHERE d.user_id = x.u AND d.day < x.before
        """
    static let deleteChunksFrom = """
        DELETE FROM user_days d USING unnest($1::text[], $2::integer[], $3::integer[]) AS x(u, day, chunk)
        WHERE d.user_id = x.u AND d.day = x.day AND d.chunk >= x.chunk
        """
    static let upsertChunks = """
        INSERT INTO user_days (user_id, day, chunk, data) SELECT * FROM unnest($1::text[], $2::integer[], $3::integer[], $4::bytea[])
        ON CONFLICT (user_id, day, chunk) DO UPDATE SET data = EXCLUDED.data
        """
    static let insertOutbox = """
        INSERT INTO outbox (topic, payload, retain)
        SELECT t, p, r FROM unnest($1::text[], $2::bytea[], $3::boolean[]) WITH ORDINALITY AS x(t, p, r, n) ORDER BY n RETURNING id
        """
    static let deleteOutbox = "DELETE FROM outbox WHERE id = ANY($1::bigint[])"
    static let deleteTimelineRows = """
        DELETE FROM history h USING unnest($1::text[], $2::text[]) AS x(u, k) WHERE h.user_id = x.u AND h.kind = 2 AND h.key = x.k
        """
    static let upsertHistory = """
        INSERT INTO history (user_id, kind, key, day, value, payload)
        SELECT * FROM unnest($1::text[], $2::integer[], $3::text[], $4::integer[], $5::double precision[], $6::bytea[])
        ON CONFLICT (user_id, kind, key, day) DO UPDATE SET value = EXCLUDED.value, payload = EXCLUDED.payload
        """
    static let upsertSeries = """
        INSERT INTO history_series (name, unit) SELECT * FROM unnest($1::text[], $2::text[])
        ON CONFLICT (name) DO UPDATE SET unit = EXCLUDED.unit WHERE history_series.unit <> EXCLUDED.unit
        """
    static let upsertPoints = """
        INSERT INTO history_points (user_id, day, series, value)
        SELECT * FROM unnest($1::text[], $2::integer[], $3::text[], $4::double precision[])
        ON CONFLICT (user_id, day, series) DO UPDATE SET value = EXCLUDED.value
        """
    static let recordStreamSequences = """
        UPDATE partitions p SET stream_seq = greatest(p.stream_seq, x.s) FROM unnest($1::integer[], $2::bigint[]) AS x(k, s) WHERE p.partition = x.k
        """
}
