#!/usr/bin/env python3
"""The plain-Python reference of the replay benchmark (docs/benchmarks.md, "Replay and the quality run").

Reads recorded traffic ({"topic","payload"} JSON lines, as `mobility-sim population` writes) and
computes, per user and local day, what the two-line rules file of scripts/bench-replay.sh makes
mobilityctl replay publish:

    series speed_p95 = p95(walkingSpeed, source: device)    # R-7 (linear) 95th percentile of the day
    series speed_7d  = mean(speed_p95, 7 d, min: 4)         # 7-day mean, >= 4 days with a value,
                                                            # never across a clinical event
Output: one JSON line per non-null value, {"user","series","day","value"} (value rounded to 1e-6
as mobilityd rounds it), sorted. Standard library only, one core.

    replay_reference.py TRAFFIC.jsonl > reference.jsonl
"""
import datetime as dt
import json
import math
import sys
from zoneinfo import ZoneInfo

CLINICAL = {"injury", "surgery", "fall", "discharge", "hospital_admission"}
SPEED_TYPES = {"HKQuantityTypeIdentifierWalkingSpeed", "walkingSpeed"}
TO_MPS = {"m/s": 1.0, "mi/hr": 0.44704, "mph": 0.44704, "km/hr": 1 / 3.6, "km/h": 1 / 3.6}
zones = {}


def zone(name):
    z = zones.get(name)
    if z is None:
        z = zones[name] = ZoneInfo(name)
    return z


def local_day(end, sample, profile_zone):
    """The engine's day of a sample: its time zone's date of `end`, else (offset 0) the user's
    profile zone's, else the date as written with its UTC offset."""
    t = dt.datetime.fromisoformat(end.replace("Z", "+00:00"))
    tz = sample.get("timeZone") or (sample.get("metadata") or {}).get("HKTimeZone")
    if tz:
        return t.astimezone(zone(tz)).date()
    if t.utcoffset() == dt.timedelta(0) and profile_zone:
        return t.astimezone(zone(profile_zone)).date()
    return t.date()


def is_device(sample):
    md = sample.get("metadata") or {}
    entered = str(md.get("HKWasUserEntered", md.get("HKMetadataKeyWasUserEntered", "0"))).lower() in ("1", "true")
    bundle = (sample.get("source") or {}).get("bundleId")
    apple = bundle.startswith("com.apple.health") if isinstance(bundle, str) else True
    return apple and not entered


def p95(values):
    v = sorted(values)
    h = (len(v) - 1) * 0.95
    lo = math.floor(h)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (h - lo) * (v[hi] - v[lo])


def rounded(x):
    return math.floor(x * 1e6 + 0.5) / 1e6 if x >= 0 else -math.floor(-x * 1e6 + 0.5) / 1e6


def main(path):
    profile = {}
    days = {}  # user -> {date: [m/s]}
    seen = {}  # user -> ids
    events = {}  # user -> [date]
    any_day = {}  # user -> (first, last) local day with any sample
    with open(path, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            parts = rec["topic"].split("/")
            if len(parts) != 5 or parts[2] != "users":
                continue
            user, kind, payload = parts[3], parts[4], rec["payload"]
            if kind == "profile":
                profile[user] = payload.get("timeZone")
            elif kind == "events":
                for e in payload if isinstance(payload, list) else [payload]:
                    cat = e.get("category", "clinical" if e.get("kind") in CLINICAL else "annotation")
                    if cat == "clinical" and "date" in e:
                        events.setdefault(user, []).append(dt.date.fromisoformat(e["date"]))
            elif kind == "samples":
                for s in payload if isinstance(payload, list) else [payload]:
                    ids = seen.setdefault(user, set())
                    if s["id"] in ids:
                        continue
                    ids.add(s["id"])
                    d = local_day(s["end"], s, profile.get(user))
                    first, last = any_day.get(user, (d, d))
                    any_day[user] = (min(first, d), max(last, d))
                    if s["type"] in SPEED_TYPES and is_device(s):
                        days.setdefault(user, {}).setdefault(d, []).append(s["value"] * TO_MPS[s["unit"]])
    out = []
    for user, (first, last) in any_day.items():
        daily = {d: p95(v) for d, v in days.get(user, {}).items()}
        marks = sorted(events.get(user, []))

        def segment(d):
            return max((e for e in marks if e <= d), default=None)

        d = first
        while d <= last:
            if d in daily:
                out.append((user, "speed_p95", d.isoformat(), rounded(daily[d])))
            seg = segment(d)
            window = [daily[x] for x in (d - dt.timedelta(k) for k in range(7)) if x in daily and segment(x) == seg]
            if len(window) >= 4:
                out.append((user, "speed_7d", d.isoformat(), rounded(sum(window) / len(window))))
            d += dt.timedelta(1)
    out.sort()
    w = sys.stdout.write
    for user, series, day, value in out:
        w(json.dumps({"user": user, "series": series, "day": day, "value": value}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
