#!/usr/bin/env python3
"""One user's deletion flood against one shard: the longest shard batch and /healthz meanwhile.

A mobilityd (--shards 1, --stall-timeout 30 as shipped) on a private mosquitto takes a user's
samples (--held N: N messages of 1 000 samples over the last 6 days, whose ids the deletions
name; else 200 samples, and the deletions name unknown ids), is paused (SIGSTOP) while the user
publishes MESSAGES deletions of 1 000 ids each
(QoS 1, mosquitto_pub -l), and resumed: the broker then delivers the whole flood at once, as it
does to a daemon that was slow or away, and it lands in the shard's queue together. Every 50 ms
until the flood is handled the script reads /healthz and mobilityd_shard_busy_seconds (how long the
batch at hand has run). It prints the longest batch observed, mobilityd_shard_batch_seconds_max
where the build has it, the time to handle the flood, and the /healthz answers other than 200.
Figures: docs/benchmarks.md ("Engine and evaluation").

  scripts/bench-deletion-flood.py [--messages N] [--held N] [--bin DIR]   (default: .build/release)
"""
import argparse, os, signal, socket, subprocess, sys, tempfile, time, urllib.error, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def metrics(port):
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except Exception:
        return {}
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        k, v = line.rsplit(" ", 1)
        out[k] = float(v)
    return out


def healthz(port):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).read()
        return 200
    except urllib.error.HTTPError as e:
        return e.code
    except Exception:
        return -1


def wait(predicate, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=400)
    ap.add_argument("--held", type=int, default=0)
    ap.add_argument("--bin", default=f"{ROOT}/.build/release")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mw-flood.")
    broker_port, metrics_port = free_port(), free_port()
    with open(f"{work}/mosquitto.conf", "w") as f:
        f.write(f"listener {broker_port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 1000000000\nmax_inflight_messages 0\n"
                + ("user root\n" if os.getuid() == 0 else ""))
    broker = subprocess.Popen(["mosquitto", "-c", f"{work}/mosquitto.conf"], stdout=open(f"{work}/mosquitto.log", "w"), stderr=subprocess.STDOUT)
    daemon = None
    try:
        wait(lambda: socket.socket().connect_ex(("127.0.0.1", broker_port)) == 0, 10)
        daemon = subprocess.Popen(
            [f"{a.bin}/mobilityd", "--broker", f"mqtt://127.0.0.1:{broker_port}", "--rules", f"{ROOT}/rules", "--state", f"{work}/state",
             "--clock", "wall", "--shards", "1", "--metrics-address", f"127.0.0.1:{metrics_port}"],
            stdout=open(f"{work}/mobilityd.log", "w"), stderr=subprocess.STDOUT)
        if not wait(lambda: metrics(metrics_port).get("mobilityd_broker_subscribed") == 1, 30):
            sys.exit(f"mobilityd did not subscribe; see {work}/mobilityd.log")
        now = time.time()
        iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
        sample = lambda m, k, t: (f'{{"id":"flood-{m}-{k}-0123456789abcdef0123456789","type":"walkingSpeed","value":1.1,"unit":"m/s",'
                                  f'"start":"{iso(t)}","end":"{iso(t)}"}}')
        with open(f"{work}/held.txt", "w") as f:
            if a.held == 0:
                f.write("[" + ",".join(sample("held", k, now - 3600 - k * 600) for k in range(200)) + "]\n")
            span = 6 * 86400 / max(1, a.held * 1000)
            for m in range(a.held):
                f.write("[" + ",".join(sample(m, k, now - 600 - (m * 1000 + k) * span) for k in range(1000)) + "]\n")
        with open(f"{work}/held.txt") as f:
            subprocess.run(["mosquitto_pub", "-p", str(broker_port), "-q", "1", "-t", "mobility/v1/users/flood/samples", "-l"], stdin=f, check=True)
        first = max(1, a.held)
        if not wait(lambda: metrics(metrics_port).get("mobilityd_messages_received_total") == first
                    and metrics(metrics_port).get('mobilityd_queue_depth{shard="0"}') == 0, 600):
            sys.exit("the samples were not taken")
        accepted = metrics(metrics_port).get("mobilityd_samples_accepted_total", 0)
        before_flood = metrics(metrics_port).get('mobilityd_shard_batch_seconds_max{shard="0"}')
        with open(f"{work}/flood.txt", "w") as f:
            for m in range(a.messages):
                ids = ",".join(f'"flood-{m}-{k}-0123456789abcdef0123456789"' for k in range(1000))
                f.write(f'{{"ids":[{ids}]}}\n')
        daemon.send_signal(signal.SIGSTOP)
        with open(f"{work}/flood.txt") as f:
            subprocess.run(["mosquitto_pub", "-p", str(broker_port), "-q", "1", "-t", "mobility/v1/users/flood/deletions", "-l"], stdin=f, check=True)
        daemon.send_signal(signal.SIGCONT)
        began = time.time()
        longest, unhealthy, total = 0.0, {}, first + a.messages
        while time.time() - began < 600:
            m = metrics(metrics_port)
            longest = max(longest, m.get('mobilityd_shard_busy_seconds{shard="0"}', 0.0))
            code = healthz(metrics_port)
            if code != 200:
                unhealthy[code] = unhealthy.get(code, 0) + 1
            if m.get("mobilityd_messages_received_total") == total and m.get('mobilityd_queue_depth{shard="0"}') == 0:
                break
            time.sleep(0.05)
        took = time.time() - began
        m = metrics(metrics_port)
        batch_max = m.get('mobilityd_shard_batch_seconds_max{shard="0"}')
        print(f"{a.messages} deletions of 1000 ids, one user holding {accepted:.0f} samples, one shard: handled in {took:.1f} s; "
              f"longest batch observed {longest:.2f} s"
              + (f", mobilityd_shard_batch_seconds_max {batch_max:.3f} s ({before_flood:.3f} s before the flood, taking the samples)"
                 if batch_max is not None else "")
              + f"; /healthz not 200: {sum(unhealthy.values())} of the polls {dict(unhealthy)}; "
              f"batches {m.get('mobilityd_evaluation_seconds_count', 0):.0f}; deletions {m.get('mobilityd_deletions_total', 0):.0f}")
    finally:
        if daemon:
            daemon.send_signal(signal.SIGCONT)
            daemon.terminate()
            daemon.wait(timeout=60)
        broker.terminate()
        broker.wait()


if __name__ == "__main__":
    main()
