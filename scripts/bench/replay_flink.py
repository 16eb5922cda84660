#!/usr/bin/env python3
"""The Flink SQL job of the replay benchmark (docs/benchmarks.md, "Replay and the quality run"): the same
computation as replay_reference.py and mobilityctl replay with the two-line rules file, as a
batch job on a local mini-cluster (PyFlink from PyPI, parallelism 2):

    speed_p95 = the R-7 95th percentile of a user's device walking speeds of each local day
    speed_7d  = the mean of speed_p95 over the 7 days ending that day, >= 4 days with a value,
                days before the user's latest clinical event on or before that day left out

The local day is the date of the sample's `end` as written (its UTC offset): for traffic from
`mobility-sim population` that is the engine's day (a sample's own zone or the user's profile
zone give the same date; replay_reference.py computes it the engine's way, and the comparison
shows they agree). Sample ids are unique in such traffic, so no de-duplication is done here.

    replay_flink.py TRAFFIC.jsonl OUT.jsonl      # prints the job's own time on stderr
"""
import datetime as dt
import json
import math
import sys
import time

from pyflink.table import EnvironmentSettings, TableEnvironment

path, out_path = sys.argv[1], sys.argv[2]
began = time.time()
env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
env.get_config().set("parallelism.default", "2")
env.execute_sql(f"""
CREATE TABLE traffic (
  topic STRING,
  payload ROW<id STRING, type STRING, `value` DOUBLE, unit STRING, `end` STRING,
              source ROW<bundleId STRING>, metadata ROW<HKWasUserEntered STRING>,
              kind STRING, category STRING, `date` STRING>
) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'json',
        'json.ignore-parse-errors' = 'false', 'json.fail-on-missing-field' = 'false')
""")
day = "TIMESTAMPDIFF(DAY, TO_TIMESTAMP('1970-01-01', 'yyyy-MM-dd'), TO_TIMESTAMP(SUBSTRING({} FROM 1 FOR 10), 'yyyy-MM-dd'))"
env.execute_sql(f"""
CREATE TEMPORARY VIEW samples AS
SELECT SPLIT_INDEX(topic, '/', 3) AS u, {day.format('payload.`end`')} AS d, payload.type AS type,
       payload.`value` * CASE payload.unit WHEN 'm/s' THEN 1E0 WHEN 'mi/hr' THEN 0.44704E0 WHEN 'km/hr' THEN 1E0 / 3.6E0 END AS v,
       (payload.source.bundleId IS NULL OR payload.source.bundleId LIKE 'com.apple.health%')
         AND COALESCE(payload.metadata.HKWasUserEntered, '0') NOT IN ('1', 'true') AS device
FROM traffic WHERE SPLIT_INDEX(topic, '/', 4) = 'samples'
""")
env.execute_sql("""
CREATE TEMPORARY VIEW speed AS
SELECT u, d, v FROM samples
WHERE type IN ('HKQuantityTypeIdentifierWalkingSpeed', 'walkingSpeed') AND device
""")
env.execute_sql("CREATE TEMPORARY VIEW lastday AS SELECT u, MAX(d) AS last_d FROM samples GROUP BY u")
env.execute_sql(f"""
CREATE TEMPORARY VIEW clinical AS
SELECT SPLIT_INDEX(topic, '/', 3) AS u, {day.format('payload.`date`')} AS ed FROM traffic
WHERE SPLIT_INDEX(topic, '/', 4) = 'events' AND payload.`date` IS NOT NULL
  AND COALESCE(payload.category, CASE WHEN payload.kind IN ('injury', 'surgery', 'fall', 'discharge', 'hospital_admission')
                                      THEN 'clinical' ELSE 'annotation' END) = 'clinical'
""")
env.execute_sql("""
CREATE TEMPORARY VIEW ranked AS
SELECT u, d, v, ROW_NUMBER() OVER (PARTITION BY u, d ORDER BY v) AS rn FROM speed
""")
env.execute_sql("CREATE TEMPORARY VIEW counts AS SELECT u, d, COUNT(*) AS n FROM speed GROUP BY u, d")
env.execute_sql("""
CREATE TEMPORARY VIEW daily AS
SELECT u, d, lo + (h - FLOOR(h)) * (hi - lo) AS p95 FROM (
  SELECT r.u, r.d, CAST(c.n - 1 AS DOUBLE) * 95E0 / 100E0 AS h,
         MIN(CASE WHEN r.rn = CAST(FLOOR(CAST(c.n - 1 AS DOUBLE) * 95E0 / 100E0) AS BIGINT) + 1 THEN r.v END) AS lo,
         MIN(CASE WHEN r.rn = LEAST(CAST(FLOOR(CAST(c.n - 1 AS DOUBLE) * 95E0 / 100E0) AS BIGINT) + 2, c.n) THEN r.v END) AS hi
  FROM ranked r JOIN counts c ON r.u = c.u AND r.d = c.d
  GROUP BY r.u, r.d, c.n)
""")
env.execute_sql("""
CREATE TEMPORARY VIEW daily_seg AS
SELECT x.u, x.d, x.p95, COALESCE(MAX(e.ed), -1) AS seg
FROM daily x LEFT JOIN clinical e ON e.u = x.u AND e.ed <= x.d GROUP BY x.u, x.d, x.p95
""")
env.execute_sql("""
CREATE TEMPORARY VIEW targets AS
SELECT t.u, t.t, COALESCE(MAX(e.ed), -1) AS seg FROM (
  SELECT DISTINCT x.u, x.d + k.k AS t FROM daily x
  CROSS JOIN (VALUES (0), (1), (2), (3), (4), (5), (6)) AS k(k)
  JOIN lastday l ON l.u = x.u WHERE x.d + k.k <= l.last_d) t
LEFT JOIN clinical e ON e.u = t.u AND e.ed <= t.t GROUP BY t.u, t.t
""")
result = env.sql_query("""
SELECT u, 'speed_p95' AS series, d, p95 AS v FROM daily
UNION ALL
SELECT t.u, 'speed_7d' AS series, t.t AS d, AVG(x.p95) AS v
FROM targets t JOIN daily_seg x ON x.u = t.u AND x.d BETWEEN t.t - 6 AND t.t AND x.seg = t.seg
GROUP BY t.u, t.t HAVING COUNT(*) >= 4
""")
job_began = time.time()
rows = []
with result.execute().collect() as results:
    for r in results:
        rows.append((r[0], r[1], int(r[2]), float(r[3])))
job = time.time() - job_began
epoch = dt.date(1970, 1, 1)
rows.sort()
with open(out_path, "w") as f:
    for u, series, d, v in rows:
        v = math.floor(v * 1e6 + 0.5) / 1e6
        f.write(json.dumps({"user": u, "series": series, "day": (epoch + dt.timedelta(d)).isoformat(), "value": v}) + "\n")
print(f"flink: {len(rows)} values; job {job:.2f} s, script {time.time() - began:.2f} s", file=sys.stderr)
