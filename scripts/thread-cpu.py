#!/usr/bin/env python3
"""CPU of every thread of the named processes, sampled from /proc every 0.5 s until SIGTERM or
SIGINT (a benchmark tool, not part of CI; docs/benchmarks.md, "End to end").

    scripts/thread-cpu.py mosquitto,mobility-bench,mobilityd OUT [--busy mobilityd/shard-0=30] &
    ... run a benchmark ...; kill %1

OUT gets each thread's user and system seconds from its first sample (0 for a thread that started
after sampling did) to its last, and each process's own total over the sampling: what its threads
do not add up to is the CPU of threads that ended between samples. OUT.timeline gets each thread's
share of a core in each 0.5 s interval. With --busy PROCESS/THREAD=PERCENT, OUT also gets each
thread's mean share of a core over the intervals in which that thread was above PERCENT (e.g.
mobilityd's figure of a bench-e2e round: its shard is busy then and idle otherwise).
"""
import os
import signal
import sys
import time

if len(sys.argv) not in (3, 5) or (len(sys.argv) == 5 and sys.argv[3] != '--busy'):
    sys.exit(__doc__)
names, out = sys.argv[1].split(','), sys.argv[2]
busy = None
if len(sys.argv) == 5:
    key, _, percent = sys.argv[4].rpartition('=')
    process, _, thread = key.partition('/')
    try:
        busy = ((process, thread), float(percent))
    except ValueError:
        busy = None
    if busy is None or not process or not thread:
        sys.exit(f'thread-cpu.py: --busy wants PROCESS/THREAD=PERCENT, got {sys.argv[4]!r}')
hz = os.sysconf('SC_CLK_TCK')
running = True


def stop(*_):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)


def ticks(path):
    """(command name, user ticks, system ticks) from a /proc stat file; counted from the last ')',
    since the name may hold spaces and parentheses."""
    stat = open(path).read()
    fields = stat[stat.rindex(')') + 2:].split()
    return stat[stat.index('(') + 1:stat.rindex(')')], int(fields[11]), int(fields[12])


def snapshot():
    """(threads, processes): (process, pid, tid, thread) -> (user, system ticks) of every thread
    of the named processes now, and (process, pid) -> the process's own total ticks."""
    threads, processes = {}, {}
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            comm = open(f'/proc/{pid}/comm').read().strip()
            if comm not in names:
                continue
            _, user, system = ticks(f'/proc/{pid}/stat')
            processes[(comm, pid)] = user + system
            tids = os.listdir(f'/proc/{pid}/task')
        except (OSError, ValueError):
            continue  # the process ended while being read
        for tid in tids:
            try:
                thread, user, system = ticks(f'/proc/{pid}/task/{tid}/stat')
            except (OSError, ValueError):
                continue  # this thread ended while being read; its siblings are still read
            threads[(comm, pid, tid, thread)] = (user, system)
    return threads, processes


samples, totals = [], []
while running:
    threads, processes = snapshot()
    samples.append((time.monotonic(), threads))
    totals.append(processes)
    time.sleep(0.5)
if len(samples) < 2:
    sys.exit('thread-cpu.py: stopped before two samples')

keys = sorted({k for _, s in samples for k in s})
# A thread first seen after the first sample started since: it counts from 0 ticks.
for k in keys:
    for _, s in samples:
        if k in s:
            break
        s[k] = (0, 0)
with open(out, 'w') as o:
    for k in keys:
        seen = [s[k] for _, s in samples if k in s]
        user, system = seen[-1][0] - seen[0][0], seen[-1][1] - seen[0][1]
        if user + system:
            o.write(f'{k[0]:16s} {k[3]:16s} tid {k[2]:>7s} user {user / hz:7.2f}s sys {system / hz:7.2f}s\n')
    o.write('\nprocess totals (user + system) over the sampling:\n')
    for p in sorted({p for t in totals for p in t}):
        seen = [t[p] for t in totals if p in t]
        first = seen[0] if p in totals[0] else 0
        o.write(f'{p[0]:16s} pid {p[1]:>7s} {(seen[-1] - first) / hz:7.2f}s\n')
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
