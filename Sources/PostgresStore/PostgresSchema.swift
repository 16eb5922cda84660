/// The PostgreSQL schema of the state backend, as migrations: migration `k` takes the schema from
/// version `k` to `k + 1`. Applied on start under an advisory lock, so that instances starting
/// together migrate once. Text keys are `COLLATE "C"` (bytes, as SQLite compares them).
enum PostgresSchema {
    /// The version this build writes.
    static var version: Int { migrations.count }

    /// The advisory lock key of migrations ("mw" schema).
    static let lockKey: Int64 = 0x6d77_5343_4845_4d41

    static let migrations: [String] = [
        // 0 → 1
        #"""
        CREATE TABLE partitions (
            partition integer PRIMARY KEY,
            token bigint NOT NULL,
            owner text NOT NULL,
            acquired_at timestamptz NOT NULL DEFAULT now());
        CREATE TABLE users (
            user_id text COLLATE "C" PRIMARY KEY,
            partition integer NOT NULL,
            applied_seq bigint NOT NULL,
            event_now bigint,
            state bytea,
            event_claims bytea);
        CREATE INDEX users_by_partition ON users (partition);
        CREATE TABLE user_days (
            user_id text COLLATE "C" NOT NULL, day integer NOT NULL, chunk integer NOT NULL, data bytea NOT NULL,
            PRIMARY KEY (user_id, day, chunk));
        CREATE TABLE outbox (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, topic text NOT NULL, payload bytea NOT NULL, retain boolean NOT NULL);
        CREATE TABLE dead_letters (
            id bigint PRIMARY KEY, topic text NOT NULL, payload bytea NOT NULL, retain boolean NOT NULL, reason text NOT NULL, at bigint NOT NULL);
        CREATE TABLE meta (key text COLLATE "C" PRIMARY KEY, value text NOT NULL);
        CREATE TABLE history (
            user_id text COLLATE "C" NOT NULL, kind integer NOT NULL, key text COLLATE "C" NOT NULL, day integer NOT NULL,
            value double precision, payload bytea NOT NULL,
            PRIMARY KEY (user_id, kind, key, day));
        CREATE TABLE history_series (name text COLLATE "C" PRIMARY KEY, unit text NOT NULL);
        CREATE TABLE history_points (
            user_id text COLLATE "C" NOT NULL, day integer NOT NULL, series text COLLATE "C" NOT NULL, value double precision,
            PRIMARY KEY (user_id, day, series));
        CREATE TABLE acknowledgements (
            alert text COLLATE "C" PRIMARY KEY, user_id text NOT NULL, rule text NOT NULL, team text NOT NULL,
            acked_by text NOT NULL, at bigint NOT NULL, note text, payload bytea NOT NULL);
        CREATE TABLE audit (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at bigint NOT NULL, action text NOT NULL, actor text NOT NULL,
            team text NOT NULL, user_id text NOT NULL, rule text NOT NULL, subject text NOT NULL, note text);
        -- The fence: every write transaction starts with it. It share-locks the committer's
        -- partition rows at the committer's tokens (so a takeover, which raises a token, waits
        -- for commits under way and fails every later one) and raises MWF01 if any token moved.
        CREATE FUNCTION mw_fence(parts integer[], tokens bigint[]) RETURNS void LANGUAGE plpgsql AS $$
        DECLARE
            held integer;
        BEGIN
            SELECT count(*) INTO held FROM (
                SELECT 1 FROM partitions p JOIN unnest(parts, tokens) AS o(part, tok) ON p.partition = o.part AND p.token = o.tok
                FOR SHARE OF p) AS locked;
            IF held <> cardinality(parts) THEN
                RAISE EXCEPTION 'fenced: another instance took over a partition of this one (its token is higher)'
                    USING ERRCODE = 'MWF01';
            END IF;
        END
        $$;
        """#,
        // 1 → 2: silences, and the audit trail's detail (the silence's matchers and period).
        #"""
        CREATE TABLE silences (id text COLLATE "C" PRIMARY KEY, team text NOT NULL, ends_at bigint NOT NULL, payload bytea NOT NULL);
        ALTER TABLE audit ADD COLUMN detail text;
        """#,
        // 2 → 3: leases on partitions (PartitionLeases), and the live instances they are shared by.
        #"""
        ALTER TABLE partitions ADD COLUMN lease_until timestamptz NOT NULL DEFAULT '-infinity';
        CREATE TABLE instances (instance text COLLATE "C" PRIMARY KEY, alive_until timestamptz NOT NULL);
        """#,
        // 3 → 4: the audit trail by user and action (a patient's acknowledgements).
        #"""
        CREATE INDEX audit_by_user ON audit (user_id, action, seq);
        """#,
        // 4 → 5: how far each partition's input stream is committed (consumed natively from
        // JetStream), and which stream that is (its creation time; 0: never consumed from one).
        #"""
        ALTER TABLE partitions ADD COLUMN stream_seq bigint NOT NULL DEFAULT 0, ADD COLUMN stream_created bigint NOT NULL DEFAULT 0;
        """#,
        // 5 → 6: the fence share-locks its partitions' rows in partition order, the order every
        // other lock on them is taken in (the leases' heartbeat and release), so that an owner's
        // heartbeat and its own fenced writes never deadlock.
        #"""
        CREATE OR REPLACE FUNCTION mw_fence(parts integer[], tokens bigint[]) RETURNS void LANGUAGE plpgsql AS $$
        DECLARE
            held integer;
        BEGIN
            SELECT count(*) INTO held FROM (
                SELECT 1 FROM partitions p JOIN unnest(parts, tokens) AS o(part, tok) ON p.partition = o.part AND p.token = o.tok
                ORDER BY p.partition FOR SHARE OF p) AS locked;
            IF held <> cardinality(parts) THEN
                RAISE EXCEPTION 'fenced: another instance took over a partition of this one (its token is higher)'
                    USING ERRCODE = 'MWF01';
            END IF;
        END
        $$;
        """#
    ]
}
