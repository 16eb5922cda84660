#!/usr/bin/env python3
"""Compares series outputs of the replay benchmark: JSON lines with user, series, day, value (any
order; lines with other fields, such as alerts, are ignored; a null value counts as absent).
Exit 0 when every (user, series, day) has the same value in both files within 1e-6.

    compare_series.py A.jsonl B.jsonl
"""
import json
import sys


def load(path):
    values = {}
    with open(path) as f:
        for line in f:
            o = json.loads(line)
            if "series" in o and o.get("value") is not None:
                values[(o["user"], o["series"], o["day"])] = float(o["value"])
    return values


a, b = load(sys.argv[1]), load(sys.argv[2])
only_a = a.keys() - b.keys()
only_b = b.keys() - a.keys()
worst = max((abs(a[k] - b[k]) for k in a.keys() & b.keys()), default=0.0)
bad = [k for k in a.keys() & b.keys() if abs(a[k] - b[k]) > 1e-6 + 1e-12]
print(f"{sys.argv[1]}: {len(a)} values, {sys.argv[2]}: {len(b)} values; only in the first {len(only_a)}, "
      f"only in the second {len(only_b)}, differing by > 1e-6: {len(bad)}; largest difference {worst:.3g}")
for k in sorted(only_a)[:5]:
    print("  only in the first:", k, a[k])
for k in sorted(only_b)[:5]:
    print("  only in the second:", k, b[k])
for k in sorted(bad)[:5]:
    print("  differs:", k, a[k], b[k])
sys.exit(0 if not only_a and not only_b and not bad else 1)
