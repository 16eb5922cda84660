#!/usr/bin/env python3
"""A gateway publishing straight to JetStream over the NATS protocol, for scripts/bench-intake.sh
(the intake `jetstream-nats`), not a product: each line of a recorded population
(`mobility-sim population`, {"topic", "payload"}) is published to `$MQTT.msgs.` + the topic's
levels joined by `.` (the subject NATS's MQTT listener stores a QoS 1 message under, before the
node's partition mapping; topics with a `.` or an empty level are refused), and counts once
JetStream's acknowledgement (PubAck) has come: what a PUBACK is to an MQTT gateway. Up to WINDOW
publishes await their acknowledgement at once, on one connection, in order.

    bench-nats-publish.py TRAFFIC.jsonl nats://127.0.0.1:4222 [WINDOW]
"""
import asyncio
import collections
import json
import sys

try:
    import nats
except ImportError:
    print("bench-nats-publish.py needs PyPI's nats-py: pip install nats-py", file=sys.stderr)
    sys.exit(2)

USAGE = "usage: bench-nats-publish.py TRAFFIC.jsonl nats://127.0.0.1:4222 [WINDOW]"


def subject(topic: str) -> str:
    levels = topic.split("/")
    if any(not level or "." in level for level in levels):
        raise ValueError(f"topic {topic!r} has an empty level or a '.'")
    return "$MQTT.msgs." + ".".join(levels)


def payload(value) -> bytes:
    # A string payload is the message's bytes as they are; JSON is written compactly.
    return value.encode() if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


async def main() -> int:
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and not sys.argv[3].isdigit()):
        print(USAGE, file=sys.stderr)
        return 2
    path, url = sys.argv[1], sys.argv[2]
    window = max(1, int(sys.argv[3])) if len(sys.argv) == 4 else 256
    try:
        with open(path, encoding="utf-8") as f:
            messages = [(subject(m["topic"]), payload(m["payload"])) for m in (json.loads(line) for line in f if line.strip())]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"bench-nats-publish.py: cannot read {path}: {e!r}", file=sys.stderr)
        return 2

    async def report(error: Exception) -> None:
        print(f"bench-nats-publish.py: {error!r}", file=sys.stderr)

    try:
        nc = await asyncio.wait_for(nats.connect(url, allow_reconnect=False, connect_timeout=5, error_cb=report), 10)
    except Exception as e:  # nats-py raises several kinds; each is fatal here
        print(f"bench-nats-publish.py: cannot connect to {url}: {e!r}", file=sys.stderr)
        return 1
    js = nc.jetstream()
    pending = collections.deque()
    try:
        for s, data in messages:
            if len(pending) >= window:
                await pending.popleft()
            pending.append(asyncio.ensure_future(js.publish(s, data, stream="$MQTT_msgs", timeout=30)))
        while pending:
            await pending.popleft()
    except Exception as e:
        for p in pending:
            p.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        print(f"bench-nats-publish.py: a publish failed: {e!r}", file=sys.stderr)
        await nc.close()
        return 1
    await nc.drain()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
