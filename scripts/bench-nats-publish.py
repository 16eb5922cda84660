#!/usr/bin/env python3
"""A gateway publishing straight to JetStream over the NATS protocol, for scripts/bench-intake.sh
(the intake `jetstream-nats`), not a product: each line of a recorded population
(`mobility-sim population`, {"topic", "payload"}) is published to `$MQTT.msgs.` + the topic as
a subject (the subject NATS's MQTT listener stores a QoS 1 message under, before the node's
partition mapping), and counts once JetStream's acknowledgement (PubAck) has come: what a
PUBACK is to an MQTT gateway. At most WINDOW publishes are awaited at once, in order on one
connection.

    bench-nats-publish.py TRAFFIC.jsonl nats://127.0.0.1:4222 [WINDOW]
"""
import asyncio
import json
import sys

try:
    import nats
except ImportError:
    print("bench-nats-publish.py needs PyPI's nats-py: pip install nats-py", file=sys.stderr)
    sys.exit(2)


async def main() -> int:
    if len(sys.argv) not in (3, 4):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    path, url = sys.argv[1], sys.argv[2]
    window = int(sys.argv[3]) if len(sys.argv) == 4 else 256
    try:
        with open(path, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        print(f"bench-nats-publish.py: cannot read {path}: {e}", file=sys.stderr)
        return 2
    messages = [
        ("$MQTT.msgs." + m["topic"].replace("/", "."), json.dumps(m["payload"], separators=(",", ":")).encode())
        for m in lines
    ]
    try:
        async def quiet(_error: Exception) -> None:
            pass

        nc = await asyncio.wait_for(nats.connect(url, allow_reconnect=False, connect_timeout=5, error_cb=quiet), 10)
    except Exception as e:  # nats-py raises several kinds; each is fatal here
        print(f"bench-nats-publish.py: cannot connect to {url}: {e!r}", file=sys.stderr)
        return 1
    js = nc.jetstream()
    pending = []
    for subject, payload in messages:
        pending.append(asyncio.ensure_future(js.publish(subject, payload, stream="$MQTT_msgs", timeout=30)))
        if len(pending) >= window:
            await asyncio.gather(*pending)
            pending = []
    await asyncio.gather(*pending)
    await nc.drain()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
