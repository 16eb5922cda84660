#!/usr/bin/env python3
"""CPU of every thread of the named processes, sampled from /proc every 0.5 s until SIGTERM or
SIGINT (a benchmark tool, not part of CI; docs/benchmarks.md, twelfth pass).

    scripts/thread-cpu.py mosquitto,mobility-bench,mobilityd OUT [--busy mobilityd/shard-0=30] &
    ... run a benchmark ...; kill %1

OUT gets each thread's user and system seconds over the whole sampling; OUT.timeline its share of a
core in each 0.5 s interval. With --busy PROCESS/THREAD=PERCENT, OUT also gets each thread's mean
share of a core over the intervals in which that thread was above PERCENT (e.g. mobilityd's
figure of a bench-e2e round: its shard is busy then and idle otherwise).
"""
import os
import signal
import sys
import time

if len(sys.argv) < 3:
    sys.exit(__doc__)
names, out = sys.argv[1].split(','), sys.argv[2]
busy = None
if len(sys.argv) == 5 and sys.argv[3] == '--busy':
    key, percent = sys.argv[4].rsplit('=', 1)
    busy = (tuple(key.split('/', 1)), float(percent))
hz = os.sysconf('SC_CLK_TCK')
running = True


def stop(*_):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)


def snapshot():
    """(process, pid, tid, thread) -> (user ticks, system ticks) of every matching thread now."""
    snap = {}
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            comm = open(f'/proc/{pid}/comm').read().strip()
            if comm not in names:
                continue
            for tid in os.listdir(f'/proc/{pid}/task'):
                stat = open(f'/proc/{pid}/task/{tid}/stat').read()
                thread = stat[stat.index('(') + 1:stat.rindex(')')]
                fields = stat[stat.rindex(')') + 2:].split()
                snap[(comm, pid, tid, thread)] = (int(fields[11]), int(fields[12]))
        except (OSError, ValueError):
            continue  # the process or thread ended while being read
    return snap


samples = []
while running:
    samples.append((time.monotonic(), snapshot()))
    time.sleep(0.5)

keys = sorted({k for _, s in samples for k in s})
with open(out, 'w') as o:
    for k in keys:
        seen = [s[k] for _, s in samples if k in s]
        user, system = seen[-1][0] - seen[0][0], seen[-1][1] - seen[0][1]
        if user + system:
            o.write(f'{k[0]:16s} {k[3]:16s} tid {k[2]:>7s} user {user / hz:7.2f}s sys {system / hz:7.2f}s\n')
    if busy:
        shares, intervals = {}, 0
        for (t0, a), (t1, b) in zip(samples, samples[1:]):
            def share(k):
                return (sum(b[k]) - sum(a[k])) / hz / (t1 - t0) * 100 if k in a and k in b else None
            marker = [k for k in keys if (k[0], k[3]) == busy[0] and (share(k) or 0) > busy[1]]
            if not marker:
                continue
            intervals += 1
            for k in keys:
                shares[k] = shares.get(k, 0) + (share(k) or 0)
        o.write(f'\nmean share of a core over the {intervals} intervals with {busy[0][0]}/{busy[0][1]} above {busy[1]:.0f} %:\n')
        for k in sorted(shares, key=lambda k: -shares[k]):
            if intervals and shares[k] / intervals >= 0.5:
                o.write(f'{k[0]:16s} {k[3]:16s} tid {k[2]:>7s} {shares[k] / intervals:6.1f} %\n')
with open(out + '.timeline', 'w') as o:
    o.write('t      ' + ' '.join(f'{k[2]:>7s}' for k in keys) + '\n')
    o.write('       ' + ' '.join(f'{k[3][:7]:>7s}' for k in keys) + '\n')
    for (t0, a), (t1, b) in zip(samples, samples[1:]):
        row = [f'{(sum(b[k]) - sum(a[k])) / hz / (t1 - t0) * 100:7.0f}' if k in a and k in b else '      -' for k in keys]
        o.write(f'{t1 - samples[0][0]:6.1f} ' + ' '.join(row) + '\n')
