"""Embedding is quiet: the README's ``running()`` + ``GroupConsumer`` example prints nothing of its own
until the program asks for logs through Python's ``logging``; a consumer without a client id names
itself as Kafka's does, so member ids do not start with "-"."""
from __future__ import annotations

import subprocess
import sys
import textwrap

EXAMPLE = textwrap.dedent("""
    import asyncio, logging, sys
    from groupcoord.coordinator.embed import running
    from groupcoord.client import GroupConsumer

    if sys.argv[1:] == ["info"]:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr)

    async def main():
        async with running(topics={"orders": 3}) as gc:
            async with GroupConsumer("orders", config={"bootstrap.servers": gc.bootstrap_servers,
                                                       "group.id": "billing"}) as c:
                await c.poll(0.5)
                await c.commit()
        print("done")

    asyncio.run(main())
""")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", EXAMPLE, *args], capture_output=True, text=True, timeout=120)


def test_the_embedding_example_prints_nothing_but_its_own_output():
    r = _run()
    assert r.returncode == 0, r.stderr
    assert (r.stdout, r.stderr) == ("done\n", "")


def test_logs_come_through_pythons_logging_when_asked_for():
    r = _run("info")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert any(line.startswith("INFO:groupcoord.events:group.created ") for line in lines), lines
    assert not any(line.startswith("DEBUG:") for line in lines)
    # the member's id: its client id (Kafka's consumer-<group>-<n>) and a UUID
    joined = next(line for line in lines if line.startswith("INFO:groupcoord.events:member.joined "))
    assert " member=consumer-billing-1-" in joined
