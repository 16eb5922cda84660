#!/usr/bin/env python3
"""Damaged-state fault injection: flips bytes at random places of ingest journal segments and
store files, truncates and deletes them, restarts mobilityd, and checks that every case ends in
either a refusal with a clear message (then the operator's start with --recover-journal
--rebuild-store recovers) or a start that recovers every intact acknowledged record — never a
silent start with less. Figures go to docs/reliability.md ("Damaged state: fault injection").

Each case, on a fresh state directory and a real mosquitto:
  1. mobilityd takes MESSAGES single-sample messages (QoS 1, each acknowledged) from 5 users, with
     a random journal segment size and commit interval, and is stopped with kill -9 or SIGTERM;
  2. one fault: a journal segment or state.sqlite / state.sqlite-wal gets bytes flipped at a
     random place, is truncated at a random offset, emptied or deleted (or the whole journal is);
  3. mobilityd restarts. Refused: the exit code and message are checked, and it is started again
     with --recover-journal --rebuild-store (the operator's path), which must start;
  4. 50 new messages must all be accepted (none skipped as "already committed"), then every
     original message is sent again: each one the state holds is a duplicate, each one it lost is
     accepted — the missing count. It must not exceed what the daemon reported lost
     (mobilityd_state_records_lost, "at most", or "an unknown number").

A missing record the daemon did not report is counted as lost, unless it is one a cut removed
past every record the store had applied: such a cut cannot be told from a journal that received
fewer messages or a crash mid-write (docs/operations.md, "Damaged state"); those are counted
apart as "undetectable cuts", with the records they removed.

  scripts/fault-injection-state.py [--cases N] [--messages N] [--seed S] [--build release|debug | --bin DIR] [--keep]
"""
import argparse, glob, json, os, random, re, shutil, signal, socket, sqlite3, struct, subprocess, sys, tempfile, time, urllib.request, zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_handed_out = set()


def free_port():
    """A free loopback port below the kernel's ephemeral range (as the test harness picks them):
    a port from the ephemeral range can be taken by an outgoing connection before the server
    that was given it binds it."""
    try:
        low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    candidates = (random.SystemRandom().randrange(10000, low) for _ in range(500)) if low > 12000 else iter(())
    for p in list(candidates) + [0] * 50:
        if p and p in _handed_out:
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
            got = s.getsockname()[1]
        except OSError:
            continue
        finally:
            s.close()
        if got not in _handed_out:
            _handed_out.add(got)
            return got
    raise SystemExit("fault-injection-state: no free loopback port")


def metrics(port):
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
    except Exception:
        return None
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        k, v = line.rsplit(" ", 1)
        out[k] = float(v)
    return out


def healthz(port):
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read().decode()
    except urllib.error.HTTPError as e:
        return f"{e.code} " + e.read().decode()
    except Exception as e:
        return f"error {e}"


def wait(cond, timeout, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()


RUNNING = []  # the daemons started and not yet stopped, stopped on the way out


class Daemon:
    def __init__(self, bin_dir, broker_port, state, client_id, extra, log_path):
        self.port = free_port()
        self.log_path = log_path
        args = [f"{bin_dir}/mobilityd", "--broker", f"mqtt://127.0.0.1:{broker_port}", "--rules", f"{ROOT}/rules", "--state", state,
                "--clock", "wall", "--client-id", client_id, "--metrics-address", f"127.0.0.1:{self.port}", "--publish-series", "false",
                "--log-level", "info"] + extra
        self.log = open(log_path, "ab")
        self.log.write(("\n$ " + " ".join(args[1:]) + "\n").encode())
        self.log.flush()
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        RUNNING.append(self)

    def m(self):
        return metrics(self.port) or {}

    def ready_or_exited(self, timeout=60):
        """True once subscribed, False once exited (or after the timeout)."""
        ok = wait(lambda: self.proc.poll() is not None or self.m().get("mobilityd_broker_subscribed") == 1, timeout)
        return ok and self.proc.poll() is None

    def idle(self, timeout=60):
        def quiet():
            m = self.m()
            return bool(m) and m.get("mobilityd_outputs_unacknowledged") == 0 and m.get("mobilityd_outputs_uncommitted") == 0 and all(
                v == 0 for k, v in m.items() if k.startswith("mobilityd_queue_depth") or k.startswith("mobilityd_shard_busy_seconds"))
        return wait(quiet, timeout)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        if self in RUNNING:
            RUNNING.remove(self)
        return self.proc.returncode


def publish(broker_port, lines_by_user):
    """Publishes each user's messages with mosquitto_pub -l at QoS 1 (exit 0: every one acknowledged)."""
    procs = []
    for user, lines in lines_by_user.items():
        p = subprocess.Popen(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(broker_port), "-q", "1", "-i", f"mwfi-pub-{user}-{random.random()}",
                              "-t", f"mobility/v1/users/{user}/samples", "-l"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        p.stdin.write(("\n".join(lines) + "\n").encode())
        p.stdin.close()
        procs.append(p)
    for p in procs:
        if p.wait(120) != 0:
            raise RuntimeError("mosquitto_pub failed")


def messages(tag, ids, base, step):
    """Single-sample messages `tag-i`, `step` seconds apart from `base`, over 5 users."""
    by_user = {}
    for i in ids:
        end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(base + i * step))
        payload = json.dumps({"id": f"{tag}-{i}", "type": "walkingSpeed", "value": round(1.0 + (i % 50) / 100, 2), "unit": "m/s", "start": end,
                              "end": end, "source": {"bundleId": "com.apple.health.fault"}}, separators=(",", ":"))
        by_user.setdefault(f"fi{i % 5}", []).append(payload)
    return by_user


def journal_records(directory):
    """(segment path, seq, start offset, end offset) of every intact record, from the start of each segment until the first bad one."""
    out = []
    for path in sorted(glob.glob(directory + "/journal-*.log")):
        b = open(path, "rb").read()
        i = 0
        while i + 24 <= len(b) and b[i:i + 4] == b"MWJ1":
            seq, tl, pl = struct.unpack_from("<QII", b, i + 4)
            end = i + 20 + tl + pl
            if end + 4 > len(b) or zlib.crc32(b[i:end]) != struct.unpack_from("<I", b, end)[0]:
                break
            out.append((path, seq, i, end + 4))
            i = end + 4
    return out


def store_position(state):
    """The highest journal record any user applied, and the committed position the store records."""
    try:
        db = sqlite3.connect(f"file:{state}/state.sqlite?mode=ro", uri=True)
        applied = db.execute("SELECT coalesce(max(applied_seq), 0) FROM users").fetchone()[0]
        row = db.execute("SELECT value FROM meta WHERE key = 'journal_committed_through'").fetchone()
        db.close()
        return max(applied, int(row[0]) if row else 0)
    except Exception:
        return None


def inject(state, rng):
    """One random fault; returns (description, the journal records it removed or damaged: (path, seq, start, end) list, or None for store faults)."""
    segs = sorted(glob.glob(state + "/journal/journal-*.log"))
    records = journal_records(state + "/journal")
    targets = [("journal", p) for p in segs] * 3 + [("store", state + "/state.sqlite")] * 2
    if os.path.exists(state + "/state.sqlite-wal"):
        targets.append(("store", state + "/state.sqlite-wal"))
    if segs:
        targets.append(("journal-dir", state + "/journal"))
    kind, path = rng.choice(targets)
    name = os.path.relpath(path, state)
    if kind == "journal-dir":
        for p in segs:
            os.remove(p)
        return f"deleted every journal segment ({len(segs)})", records
    size = os.path.getsize(path)
    action = rng.choice(["flip", "flip", "flip", "truncate", "empty", "delete"])
    if action == "flip" and size > 0:
        n = rng.choice([1, 4, 16, 64])
        at = rng.randrange(0, max(size - n, 1))
        with open(path, "r+b") as f:
            f.seek(at)
            old = f.read(n)
            f.seek(at)
            f.write(bytes(x ^ (rng.randrange(255) + 1) for x in old))
        hit = [r for r in records if r[0] == path and r[3] > at and r[2] < at + n]
        return f"{name}: {len(old)} bytes flipped at {at} of {size}", hit
    if action == "truncate" and size > 0:
        at = rng.randrange(0, size)
        os.truncate(path, at)
        return f"{name}: truncated to {at} of {size} bytes", [r for r in records if r[0] == path and r[3] > at]
    if action == "empty" or size == 0:
        os.truncate(path, 0)
        return f"{name}: emptied ({size} bytes)", [r for r in records if r[0] == path]
    os.remove(path)
    return f"{name}: deleted ({size} bytes)", [r for r in records if r[0] == path]


def reported_loss(log_text):
    """The last start's reported loss: (bound, unknown) from `state recovered with losses records_lost=…`."""
    m = re.findall(r'state recovered with losses" records_lost="?((?:at most )?\d+(?: and an unknown number)?)', log_text)
    if not m:
        return 0, False
    s = m[-1]
    return int(re.search(r"\d+", s).group()), "unknown" in s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--messages", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--build", choices=["release", "debug"], default="release")
    ap.add_argument("--bin", help="use the mobilityd in this directory as built (no swift build), e.g. .build/debug")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (state snapshots and logs)")
    a = ap.parse_args()
    os.chdir(ROOT)
    if a.bin:
        bin_dir = os.path.abspath(a.bin)
    else:
        subprocess.run(["swift", "build", "-c", a.build], check=True, stdout=subprocess.DEVNULL)
        bin_dir = f"{ROOT}/.build/{a.build}"
    work = tempfile.mkdtemp(prefix="mw-fault-state.")
    broker_port = free_port()
    with open(f"{work}/mosquitto.conf", "w") as f:
        f.write(f"listener {broker_port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\nmax_inflight_messages 0\n"
                + ("user root\n" if os.getuid() == 0 else ""))
    broker = subprocess.Popen(["mosquitto", "-c", f"{work}/mosquitto.conf"], stdout=open(f"{work}/mosquitto.log", "w"), stderr=subprocess.STDOUT)
    rng = random.Random(a.seed)
    began = time.time()
    print(f"== seed {a.seed}, {a.cases} cases of {a.messages} messages, work {work}", flush=True)
    totals = dict(tried=0, refused=0, started=0, recovered=0, lost=0, lost_records=0, undetectable=0, undetectable_records=0, failed=0, anomalies=0)
    codes = {}
    # Every sample within the last two days: before the clock-skew guard, inside the allowed lateness.
    base = int(time.time()) // 60 * 60 - 2 * 86400
    step = max(2, min(60, (2 * 86400 - 3600) // a.messages))
    try:
        wait(lambda: socket.socket().connect_ex(("127.0.0.1", broker_port)) == 0, 10)
        for case in range(a.cases):
            state = f"{work}/case-{case}"
            log = f"{work}/case-{case}.log"
            tag = f"c{case}"
            cid = f"mwfi-{case}"
            seg = rng.choice([8192, 65536, 1 << 20])
            commit = rng.choice(["100", "100", "5000"])
            stop = rng.choice(["kill", "kill", "term"])
            d = Daemon(bin_dir, broker_port, state, cid, ["--journal-segment-bytes", str(seg), "--commit-interval", commit], log)
            if not d.ready_or_exited():
                raise RuntimeError(f"case {case}: mobilityd did not start; see {log}")
            publish(broker_port, messages(tag, range(a.messages), base, step))
            if not wait(lambda: d.m().get("mobilityd_messages_received_total") == a.messages, 120):
                raise RuntimeError(f"case {case}: {d.m().get('mobilityd_messages_received_total')} of {a.messages} received; see {log}")
            d.stop(signal.SIGKILL if stop == "kill" else signal.SIGTERM)
            position = store_position(state)
            shutil.copytree(state, state + ".before")
            fault, removed = inject(state, rng)
            totals["tried"] += 1
            outcome = []
            d = Daemon(bin_dir, broker_port, state, cid, [], log)
            if not d.ready_or_exited():
                code = d.stop()
                text = open(log, errors="replace").read().split("\n$ ")[-1]
                clear = code in (1, 65, 66) and ("refusing to start" in text or "cannot read the state store" in text or "cannot open the state store" in text)
                if not clear:
                    totals["failed"] += 1
                    print(f"  case {case}: {fault}: exit {code} WITHOUT A CLEAR MESSAGE; see {log}", flush=True)
                    continue
                totals["refused"] += 1
                codes[code] = codes.get(code, 0) + 1
                outcome.append(f"refused {code}")
                d = Daemon(bin_dir, broker_port, state, cid, ["--recover-journal", "--rebuild-store"], log)
                if not d.ready_or_exited():
                    d.stop()
                    totals["failed"] += 1
                    print(f"  case {case}: {fault}: refused, and --recover-journal --rebuild-store DID NOT START; see {log}", flush=True)
                    continue
                outcome.append("recovered by flag")
            else:
                totals["started"] += 1
                outcome.append("started")
            if not d.idle():
                raise RuntimeError(f"case {case}: not idle after start; see {log}")
            bound, unknown = reported_loss(open(log, errors="replace").read().split("\n$ ")[-1])
            m0 = d.m()
            publish(broker_port, messages(tag + "-new", range(50), base + step // 2, step))
            wait(lambda: d.m().get("mobilityd_messages_received_total", 0) >= m0.get("mobilityd_messages_received_total", 0) + 50, 60)
            d.idle()
            m1 = d.m()
            new_accepted = m1["mobilityd_samples_accepted_total"] - m0["mobilityd_samples_accepted_total"]
            publish(broker_port, messages(tag, range(a.messages), base, step))
            wait(lambda: d.m().get("mobilityd_messages_received_total", 0) >= m1["mobilityd_messages_received_total"] + a.messages, 120)
            d.idle()
            m2 = d.m()
            missing = int(m2["mobilityd_samples_accepted_total"] - m1["mobilityd_samples_accepted_total"])
            duplicates = int(m2["mobilityd_samples_duplicate_total"] - m1["mobilityd_samples_duplicate_total"])
            health = healthz(d.port).strip()
            d.stop()
            unreported = 0 if unknown else max(0, missing - bound)
            skipped_new = int(50 - new_accepted)
            outcome.append(f"missing {missing}, reported {'at most ' if bound else ''}{bound}{' + unknown' if unknown else ''}")
            if missing + duplicates != a.messages:
                totals["anomalies"] += 1
                outcome.append(f"ANOMALY: {missing} accepted + {duplicates} duplicates of {a.messages} re-sent")
            # Removed past every applied record of the newest segment: indistinguishable from fewer messages.
            newest = sorted(glob.glob(state + ".before/journal/journal-*.log"))
            newest = newest[-1].replace(".before", "", 1) if newest else None
            cut = [r for r in (removed or []) if r[0] == newest and position is not None and r[1] > position]
            if skipped_new > 0 or (unreported > 0 and len(cut) < unreported):
                totals["lost"] += 1
                totals["lost_records"] += unreported + skipped_new
                outcome.append(f"LOST {unreported} unreported" + (f", {skipped_new} new messages skipped" if skipped_new else ""))
            elif unreported > 0:
                totals["undetectable"] += 1
                totals["undetectable_records"] += unreported
                totals["recovered"] += 1
                outcome.append(f"undetectable cut: {unreported} records past the store's last applied record {position}")
            else:
                totals["recovered"] += 1
            outcome.append("healthz " + health.split(":")[0])
            print(f"  case {case} (segments {seg} B, commit {commit} ms, {stop}): {fault}: " + "; ".join(outcome), flush=True)
            if not a.keep:
                shutil.rmtree(state, ignore_errors=True)
                shutil.rmtree(state + ".before", ignore_errors=True)
    finally:
        for d in list(RUNNING):
            d.stop(signal.SIGKILL)
        broker.terminate()
        broker.wait()
    print(f"== {totals['tried']} cases: refused {totals['refused']} ({', '.join(f'exit {k}: {v}' for k, v in sorted(codes.items()))}), "
          f"started {totals['started']}; recovered {totals['recovered']}; lost {totals['lost']} ({totals['lost_records']} records); "
          f"undetectable cuts {totals['undetectable']} ({totals['undetectable_records']} records); failed {totals['failed']}; anomalies {totals['anomalies']}; "
          f"{time.time() - began:.0f} s")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if totals["lost"] == 0 and totals["failed"] == 0 and totals["anomalies"] == 0 else 1)


if __name__ == "__main__":
    main()
