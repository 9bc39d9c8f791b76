"""The live web page at / of the admin listener, in a real browser (Debian's chromium driven by
Playwright) while a real consumer group (confluent-kafka) rebalances, and while a consumer group of
the new protocol (KIP-848), driven heartbeat by heartbeat, reconciles towards its target; its
timeline's labels when members join and leave within milliseconds, its Moved column when it cannot
know, its rebalance history after a restart with a data dir; and its static routes.

The screenshots go to ``$GROUPCOORD_ARTIFACTS/web-page.png``, ``web-page-consumer-group.png``,
``web-page-timeline-marks.png`` and ``web-page-after-restart.png`` (default: ``test-artifacts/``
under the project root). ``GROUPCOORD_CHROMIUM`` overrides the browser executable.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time
from pathlib import Path

import aiohttp
import pytest

from groupcoord.coordinator.embed import ThreadedCoordinator, running

ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = os.environ.get("GROUPCOORD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
TOPIC = "orders"
PARTITIONS = 6
GROUP = "billing"
RECORDS_PER_PARTITION = 10
WAIT = 30.0


def artifacts_dir() -> Path:
    return Path(os.environ.get("GROUPCOORD_ARTIFACTS") or ROOT / "test-artifacts")


# ------------------------------------------------------------------------------------ static routes
async def _raw_get(host: str, port: int, target: str) -> tuple[int, bytes]:
    """GET with the request target sent exactly as given (no client-side normalisation)."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1]


async def test_page_and_static_files_with_their_content_types():
    web = ROOT / "coordinator" / "admin" / "web"
    async with running(http=True) as gc, aiohttp.ClientSession() as http:
        async with http.get(gc.admin_url + "/") as r:
            assert r.status == 200
            assert r.content_type == "text/html" and r.charset == "utf-8"
            assert "default-src 'self'" in r.headers["Content-Security-Policy"]
            assert await r.read() == (web / "index.html").read_bytes()
        for name, ctype in [("app.js", "text/javascript"), ("style.css", "text/css"),
                            ("favicon.svg", "image/svg+xml"), ("index.html", "text/html")]:
            async with http.get(f"{gc.admin_url}/static/{name}") as r:
                assert (r.status, r.content_type) == (200, ctype), name
                assert r.headers["X-Content-Type-Options"] == "nosniff"
                assert await r.read() == (web / name).read_bytes()
        async with http.get(gc.admin_url + "/static/missing.js") as r:
            assert r.status == 404
            assert (await r.json())["error"] == "not_found"
        # every file the page references is served
        html = (web / "index.html").read_text()
        for name in ("app.js", "style.css", "favicon.svg"):
            assert f"/static/{name}" in html

        host, port = gc.admin.host, gc.admin.port
        for target in ("/static/..%2Fweb_page.py", "/static/%2e%2e%2fweb_page.py", "/static/../web_page.py",
                       "/static/..%2F..%2Fevents.py", "/static/%2e%2e", "/static/..", "/static/.",
                       "/static/web_page.py", "/static/..%5Cweb_page.py", "/static/%00app.js",
                       "/static/app.js%00", "/static/%2Fetc%2Fpasswd"):
            status, body = await _raw_get(host, port, target)
            assert status == 404, target
            assert b"import" not in body and b"root:" not in body, target


async def test_openapi_lists_the_page_routes():
    async with running(http=True) as gc, aiohttp.ClientSession() as http:
        async with http.get(gc.admin_url + "/openapi.json") as r:
            doc = await r.json()
    assert set(doc["paths"]["/"]["get"]["responses"]) == {"200", "404"}
    static = doc["paths"]["/static/{file}"]["get"]
    assert "text/javascript" in static["responses"]["200"]["content"]


# ------------------------------------------------------------------------------------ the browser test
class Member:
    """A confluent-kafka consumer polling on a thread of its own; what it reports is read there."""

    def __init__(self, bootstrap: str, client_id: str):
        from confluent_kafka import Consumer

        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": client_id,
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 200, "auto.offset.reset": "earliest",
            "enable.auto.commit": True, "auto.commit.interval.ms": 200, "fetch.wait.max.ms": 100,
            "reconnect.backoff.ms": 50, "retry.backoff.ms": 50,
        })
        self.consumer.subscribe([TOPIC])
        self.assignment: frozenset[tuple[str, int]] = frozenset()
        self.member_id = ""
        self.consumed = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=client_id, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                msg = self.consumer.poll(0.05)
                if msg is not None and not msg.error():
                    self.consumed += 1
                self.assignment = frozenset((tp.topic, tp.partition) for tp in self.consumer.assignment())
                self.member_id = self.consumer.memberid() or ""
        except BaseException as exc:   # surfaced by the test
            self.error = exc
        finally:
            self.consumer.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15)


def wait_until(cond, what: str, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


# the page's members table as {member id: [[topic, partition], ...]}, and whether it matches
PAGE_MATCHES = """([gen, expected]) => {
  const section = document.getElementById("group-detail");
  if (section.hidden || section.dataset.state !== "Stable" || section.dataset.generation !== String(gen)) return false;
  const rows = [...document.querySelectorAll("#members tbody tr[data-member]")];
  const shown = {};
  for (const tr of rows) {
    shown[tr.dataset.member] = [...tr.querySelectorAll(".chip[data-partition]")]
      .map((c) => c.dataset.topic + "-" + c.dataset.partition).sort();
  }
  return JSON.stringify(shown, Object.keys(shown).sort()) === JSON.stringify(expected, Object.keys(expected).sort());
}"""


PAGE_SHOWS = """() => {
  const section = document.getElementById("group-detail");
  const shown = {};
  for (const tr of document.querySelectorAll("#members tbody tr[data-member]")) {
    shown[tr.dataset.member] = [...tr.querySelectorAll(".chip[data-partition]")]
      .map((c) => c.dataset.topic + "-" + c.dataset.partition).sort();
  }
  return {state: section.dataset.state, generation: section.dataset.generation, members: shown};
}"""


def wait_for_page(page, generation: int, expected: dict[str, list[str]]) -> None:
    """Until the page shows the group Stable in ``generation`` with exactly ``expected``."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(PAGE_MATCHES, arg=[generation, expected], timeout=WAIT * 1000)
    except PlaywrightTimeout:
        raise AssertionError(f"the page shows {page.evaluate(PAGE_SHOWS)}, not generation {generation} "
                             f"with {expected}") from None


def expected_members(*members: Member) -> dict[str, list[str]]:
    return {m.member_id: sorted(f"{t}-{p}" for t, p in m.assignment) for m in members}


def stable_generation(events: list[dict]) -> int:
    done = [e for e in events if e["event"] == "rebalance.completed" and e["group"] == GROUP and e["outcome"] == "Stable"]
    return done[-1]["generation"] if done else -1


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no chromium at {CHROMIUM} (Debian package 'chromium')")
def test_page_follows_a_real_group_rebalancing():
    from confluent_kafka import Producer
    from playwright.sync_api import sync_playwright

    events: list[dict] = []
    members: list[Member] = []
    console_errors: list[str] = []
    with ThreadedCoordinator(http=True, topics={TOPIC: PARTITIONS}) as gc:
        gc.call(gc.service.bus.subscribe, events.append)
        producer = Producer({"bootstrap.servers": gc.bootstrap_servers, "linger.ms": 0})
        for p in range(PARTITIONS):
            for i in range(RECORDS_PER_PARTITION):
                producer.produce(TOPIC, value=f"r{i}".encode(), partition=p)
        assert producer.flush(10) == 0
        del producer      # destroyed now, not after the coordinator stopped

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda exc: console_errors.append(f"uncaught: {exc}"))
                page.goto(gc.admin_url + "/")
                page.wait_for_selector('#connection[data-connection="live"]', timeout=WAIT * 1000)
                page.wait_for_selector(f'#topic-list li[data-topic="{TOPIC}"]', timeout=WAIT * 1000)
                assert page.locator('#node-list li[data-up="true"]').count() == 1

                # one consumer: generation N, all partitions its own
                members.append(Member(gc.bootstrap_servers, "billing-a"))
                first = members[0]
                wait_until(lambda: first.member_id and len(first.assignment) == PARTITIONS,
                           "the first consumer to own every partition")
                gen1 = wait_until(lambda: stable_generation(events) if stable_generation(events) > 0 else None,
                                  "the first generation")
                wait_for_page(page, gen1, expected_members(first))
                page.wait_for_selector(f'#timeline .bar[data-generation="{gen1}"]', timeout=WAIT * 1000)
                assert page.locator(f'#group-list li[data-group="{GROUP}"][data-state="Stable"]').count() == 1

                # a second consumer: generation N+1, partitions split between the two
                members.append(Member(gc.bootstrap_servers, "billing-b"))
                second = members[1]

                def split():
                    a, b = first.assignment, second.assignment
                    return (a and b and not a & b and len(a | b) == PARTITIONS
                            and stable_generation(events) > gen1 and first.member_id and second.member_id)

                wait_until(split, "the partitions to be split between the two consumers")
                gen2 = stable_generation(events)
                wait_for_page(page, gen2, expected_members(first, second))

                # the partitions the second consumer took over are shown as moved
                moved = set(page.eval_on_selector_all(
                    '#members .chip[data-moved="true"]', "cs => cs.map(c => c.dataset.topic + '-' + c.dataset.partition)"))
                assert moved == {f"{t}-{p}" for t, p in second.assignment}
                # the timeline: a bar per generation, and the join of the second member
                page.wait_for_selector(f'#timeline .bar[data-generation="{gen2}"]', timeout=WAIT * 1000)
                assert page.locator(f'#timeline .marker.join[data-member="{second.member_id}"]').count() == 1
                row = page.locator(f'#history tbody tr[data-generation="{gen2}"]')
                assert "billing-b" in row.inner_text()
                assert row.locator("td[data-moved]").get_attribute("data-moved") == str(len(moved))

                # offsets and lag: what the consumers committed, from the records produced
                wait_until(lambda: first.consumed + second.consumed >= PARTITIONS * RECORDS_PER_PARTITION,
                           "every record to be consumed")
                page.wait_for_function(
                    """([n, count]) => {
                      const rows = [...document.querySelectorAll('#offsets tbody tr[data-partition]')];
                      return rows.length === n && rows.every((r) => r.dataset.lag === '0' &&
                        r.children[1].textContent === String(count) && r.children[4].textContent !== '–');
                    }""", arg=[PARTITIONS, RECORDS_PER_PARTITION], timeout=WAIT * 1000)

                out = artifacts_dir()
                out.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out / "web-page.png"), full_page=True)
                assert (out / "web-page.png").stat().st_size > 10_000
                assert console_errors == []
            finally:
                browser.close()
                for m in members:
                    m.stop()
        for m in members:
            assert m.error is None, m.error


# ------------------------------------------------------------------------------------ a consumer group
CG = "kip848"


def cg_request(gc, member: str, epoch: int, owned: list[int] | None = None, group: str = CG):
    """A ConsumerGroupHeartbeat of ``member``: joining (epoch 0) subscribes to the topic, -1 leaves;
    ``owned``: the partitions the member says it owns (None: as before)."""
    from groupcoord.coordinator.group.consumer.requests import ConsumerGroupHeartbeatRequest

    joining = epoch == 0
    topic_id = gc.service.cluster.topics[TOPIC].topic_id
    return ConsumerGroupHeartbeatRequest(group, member, epoch, rebalance_timeout_ms=30000 if joining else -1,
                                         subscribed_topic_names=[TOPIC] if joining else None,
                                         topic_partitions=[] if joining else
                                         (None if owned is None else [(topic_id, owned)]),
                                         client_id=f"{group}-{member}", client_host="/127.0.0.1")


def cg_heartbeat(gc, member: str, epoch: int, owned: list[int] | None = None) -> dict:
    """One ConsumerGroupHeartbeat (see cg_request) handed to the service on its loop."""
    out: list[dict] = []
    gc.call(gc.service.group_coordinator.consumer_group_heartbeat, out.append, cg_request(gc, member, epoch, owned))
    assert out[0]["error_code"] == 0, out
    return out[0]


def cg_burst(gc, group: str, joins: list[str], leaves: list[str]) -> None:
    """Members join ``group``, then some of them leave, heartbeat after heartbeat in one turn of the
    service's loop: all within a few milliseconds."""
    requests = ([cg_request(gc, m, 0, group=group) for m in joins] +
                [cg_request(gc, m, -1, group=group) for m in leaves])

    def send_all() -> list[dict]:
        out: list[dict] = []
        for req in requests:
            gc.service.group_coordinator.consumer_group_heartbeat(out.append, req)
        return out

    answers = gc.call(send_all)
    assert [a["error_code"] for a in answers] == [0] * len(requests), answers


# the consumer group's members as the page shows them: {member: [epoch, state, {"topic-p": "owned,target"}]}
CONSUMER_SHOWS = """() => {
  const section = document.getElementById("group-detail");
  const members = {};
  for (const tr of document.querySelectorAll("#members tbody tr[data-member]")) {
    const chips = {};
    for (const c of tr.querySelectorAll(".chip[data-partition]")) {
      chips[c.dataset.topic + "-" + c.dataset.partition] =
        (c.dataset.owned === "true" ? "owned" : "") + "," + (c.dataset.target === "true" ? "target" : "") +
        (c.dataset.revoking ? ",pending" : "");
    }
    members[tr.dataset.member] = [Number(tr.dataset.memberEpoch), tr.dataset.reconciliation, chips];
  }
  return {type: section.dataset.type, state: section.dataset.state, groupEpoch: section.dataset.groupEpoch,
          assignmentEpoch: section.dataset.assignmentEpoch, members};
}"""


def wait_for_consumer_page(page, expected: dict) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(f"(expected) => JSON.stringify(({CONSUMER_SHOWS})()) === JSON.stringify(expected)",
                               arg=expected, timeout=WAIT * 1000)
    except PlaywrightTimeout:
        raise AssertionError(f"the page shows {page.evaluate(CONSUMER_SHOWS)}, not {expected}") from None


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no chromium at {CHROMIUM} (Debian package 'chromium')")
def test_page_shows_a_consumer_group_reconciling_towards_its_target():
    from playwright.sync_api import sync_playwright

    console_errors: list[str] = []
    # (Kafka 4.1's epochs: a new group's first member at 1)
    with ThreadedCoordinator(http=True, topics={TOPIC: 3}, config={"groupcoord.kafka.version": "4.1"}) as gc:
        cg_heartbeat(gc, "a", 0)                   # epoch 1: a owns every partition
        cg_heartbeat(gc, "b", 0)                   # epoch 2: b's target partition is still a's
        group = gc.call(gc.service.group_coordinator.consumer_group, CG)
        [moving] = [p for ps in group.target["b"].values() for p in ps]
        keep = sorted(p for ps in group.target["a"].values() for p in ps)
        tp = lambda p: f"{TOPIC}-{p}"                                  # noqa: E731

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda exc: console_errors.append(f"uncaught: {exc}"))
                page.goto(f"{gc.admin_url}/#group={CG}")
                page.wait_for_selector('#connection[data-connection="live"]', timeout=WAIT * 1000)

                # Reconciling at epoch 2: a (epoch 1) still owns what it must give up, b waits for it
                wait_for_consumer_page(page, {
                    "type": "consumer", "state": "Reconciling", "groupEpoch": "2", "assignmentEpoch": "2",
                    "members": {"a": [1, "stable", {**{tp(p): "owned,target" for p in keep}, tp(moving): "owned,"}],
                                "b": [2, "unreleased_partitions", {tp(moving): ",target"}]}})
                assert page.locator(f'#group-list li[data-group="{CG}"][data-type="consumer"]'
                                    '[data-state="Reconciling"]').count() == 1
                assert page.locator(f'#members .chip.awaiting[data-partition="{moving}"]').count() == 1
                assert page.locator(f'#members .chip.revoking[data-partition="{moving}"]').count() == 1
                assert page.locator("#target-note").is_visible()
                assert page.locator('.legend li[data-for="consumer"]').first.is_visible()
                assert not page.locator('.legend li[data-for="classic"]').first.is_visible()
                facts = page.locator("#group-facts").inner_text()
                assert "Group epoch" in facts and "Assignment epoch" in facts and "uniform" in facts

                # a heartbeats: it is revoking the partition (no event: the page's poll shows it)
                cg_heartbeat(gc, "a", 1)
                wait_for_consumer_page(page, {
                    "type": "consumer", "state": "Reconciling", "groupEpoch": "2", "assignmentEpoch": "2",
                    "members": {"a": [1, "unrevoked_partitions", {**{tp(p): "owned,target" for p in keep},
                                                                  tp(moving): "owned,,pending"}],
                                "b": [2, "unreleased_partitions", {tp(moving): ",target"}]}})

                # a lets it go, b takes it: Stable, every partition owned where the target puts it
                cg_heartbeat(gc, "a", 1, owned=keep)
                cg_heartbeat(gc, "b", 2)
                wait_for_consumer_page(page, {
                    "type": "consumer", "state": "Stable", "groupEpoch": "2", "assignmentEpoch": "2",
                    "members": {"a": [2, "stable", {tp(p): "owned,target" for p in keep}],
                                "b": [2, "stable", {tp(moving): "owned,target"}]}})
                # the timeline: one bar per group epoch, b's join; the history names why
                page.wait_for_selector('#timeline .bar[data-generation="2"]', timeout=WAIT * 1000)
                assert page.locator('#timeline .bar[data-generation="1"]').count() == 1
                assert page.locator('#timeline .marker.join[data-member="b"]').count() == 1
                row = page.locator('#history tbody tr[data-generation="2"]')
                assert "member_joined" in row.inner_text() and f"{CG}-b" in row.inner_text()
                assert page.locator("#history-gen").inner_text() == "Group epoch"

                out = artifacts_dir()
                out.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out / "web-page-consumer-group.png"), full_page=True)
                assert console_errors == []
            finally:
                browser.close()


# ------------------------------------------------------------------------------------ the timeline's member labels
# every label of the members lane, with its box on the page
MARK_LABELS = """() => [...document.querySelectorAll('#timeline .marks text')].map((t) => {
  const r = t.getBoundingClientRect();
  return {text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom};
})"""

# the lane's clusters: kind, how many marks, the label and its tooltip
MARK_CLUSTERS = """() => [...document.querySelectorAll('#timeline .marks .cluster')].map((g) => ({
  kind: g.dataset.kind, count: Number(g.dataset.count), labelled: g.dataset.labelled === "true",
  label: g.querySelector('text.mark-label')?.textContent ?? null,
  title: g.querySelector('.label > title')?.textContent ?? null,
}))"""


def overlapping(boxes: list[dict]) -> list[tuple[str, str]]:
    return [(a["text"], b["text"]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]]


def check_mark_labels(page, joined: list[str], left: list[str], group: str) -> None:
    """No two labels of the members lane overlap, every join and leave is in one cluster, and each
    label names its member or counts its cluster, its tooltip naming them all."""
    boxes = page.evaluate(MARK_LABELS)
    assert boxes and overlapping(boxes) == [], boxes
    clusters = page.evaluate(MARK_CLUSTERS)
    for kind, members, verb in (("join", joined, "joined"), ("leave", left, "left")):
        ours = [c for c in clusters if c["kind"] == kind]
        assert sum(c["count"] for c in ours) == len(members), clusters
        for c in ours:
            assert c["labelled"], clusters
            if c["count"] > 1:
                assert c["label"] == f"{c['count']} {verb}", c
            assert c["title"].startswith(f"{c['count']} {verb} at "), c
        named = ", ".join(c["title"].split(": ", 1)[1] for c in ours)
        assert all(f"{group}-{m} ({m})" in named for m in members), (members, clusters)


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no chromium at {CHROMIUM} (Debian package 'chromium')")
def test_join_and_leave_labels_close_in_time_do_not_overlap():
    from playwright.sync_api import sync_playwright

    group = "burst"
    console_errors: list[str] = []
    with ThreadedCoordinator(http=True, topics={TOPIC: PARTITIONS}, config={"groupcoord.kafka.version": "4.1"}) as gc:
        # six members join and three of them leave within milliseconds, before the page opens
        first, gone = ["m1", "m2", "m3", "m4", "m5", "m6"], ["m2", "m4", "m6"]
        cg_burst(gc, group, first, gone)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda exc: console_errors.append(f"uncaught: {exc}"))
                page.goto(f"{gc.admin_url}/#group={group}")
                page.wait_for_selector('#connection[data-connection="live"]', timeout=WAIT * 1000)
                page.wait_for_function("(n) => document.querySelectorAll('#timeline .marker').length === n",
                                       arg=len(first) + len(gone), timeout=WAIT * 1000)
                check_mark_labels(page, first, gone, group)

                # more of them, live, within milliseconds again
                more, gone_too = ["n1", "n2", "n3", "n4"], ["m1", "n1"]
                cg_burst(gc, group, more, gone_too)
                page.wait_for_function("(n) => document.querySelectorAll('#timeline .marker').length === n",
                                       arg=len(first) + len(gone) + len(more) + len(gone_too), timeout=WAIT * 1000)
                check_mark_labels(page, first + more, gone + gone_too, group)

                out = artifacts_dir()
                out.mkdir(parents=True, exist_ok=True)
                page.locator("#timeline").screenshot(path=str(out / "web-page-timeline-marks.png"))
                assert console_errors == []
            finally:
                browser.close()


# ------------------------------------------------------------------------------------ Moved, when it is not known
MOVED_NOT_SEEN = ("not known: this page did not see group epoch {} Stable (it was not open then, or the group "
                  "moved on before it looked), so it never saw who owned what")
MOVED_FIRST_SEEN = "not known: group epoch {} is the first this page saw Stable, with nothing earlier to compare"
MOVED_NOTE = ("Moved – not known: the page learns who owns which partitions while it is open, so it cannot tell "
              "for rebalances that completed before it was opened, nor for the first one it saw (nothing "
              "earlier to compare with).")


def moved_cell(page, epoch: int):
    return page.locator(f'#history tbody tr[data-generation="{epoch}"] td:last-child')


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no chromium at {CHROMIUM} (Debian package 'chromium')")
def test_moved_says_why_it_is_not_known():
    from playwright.sync_api import sync_playwright

    console_errors: list[str] = []
    with ThreadedCoordinator(http=True, topics={TOPIC: 3}, config={"groupcoord.kafka.version": "4.1"}) as gc:
        # before the page opens: epoch 1 (a alone), epoch 2 (b takes one of a's partitions)
        cg_heartbeat(gc, "a", 0)
        cg_heartbeat(gc, "b", 0)
        group = gc.call(gc.service.group_coordinator.consumer_group, CG)
        keep = sorted(p for ps in group.target["a"].values() for p in ps)
        cg_heartbeat(gc, "a", 1, owned=keep)
        cg_heartbeat(gc, "b", 2)

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda exc: console_errors.append(f"uncaught: {exc}"))
                page.goto(f"{gc.admin_url}/#group={CG}")
                page.wait_for_selector('#connection[data-connection="live"]', timeout=WAIT * 1000)
                page.wait_for_selector('#history tr[data-generation="2"] td[data-moved-unknown="first_seen"]',
                                       timeout=WAIT * 1000)
                # epoch 1 completed before the page opened; epoch 2 is the first it saw Stable
                assert moved_cell(page, 1).get_attribute("data-moved-unknown") == "not_seen"
                for epoch, title in ((1, MOVED_NOT_SEEN), (2, MOVED_FIRST_SEEN)):
                    assert moved_cell(page, epoch).inner_text() == "–"
                    assert moved_cell(page, epoch).get_attribute("title") == title.format(epoch)
                note = page.locator("#moved-unknown-note")
                assert note.is_visible() and " ".join(note.inner_text().split()) == MOVED_NOTE

                # b leaves, a takes its partition back: epoch 3, seen Stable after epoch 2, is known
                cg_heartbeat(gc, "b", -1)
                cg_heartbeat(gc, "a", 2, owned=keep)
                page.wait_for_selector('#history tr[data-generation="3"] td[data-moved="1"]', timeout=WAIT * 1000)
                assert moved_cell(page, 3).inner_text() == "1"
                assert moved_cell(page, 3).get_attribute("data-moved-unknown") is None
                assert note.is_visible()        # epochs 1 and 2 still are not known
                assert console_errors == []
            finally:
                browser.close()


# ------------------------------------------------------------------------------------ after a restart
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no chromium at {CHROMIUM} (Debian package 'chromium')")
def test_the_page_shows_the_rebalance_history_after_a_restart(tmp_path):
    from playwright.sync_api import sync_playwright

    config = {"groupcoord.kafka.version": "4.1"}
    with ThreadedCoordinator(http=True, topics={TOPIC: 3}, config=config, data_dir=tmp_path) as gc:
        cg_heartbeat(gc, "a", 0)                   # epoch 1: a owns every partition
        cg_heartbeat(gc, "b", 0)                   # epoch 2: one of them is b's target
        group = gc.call(gc.service.group_coordinator.consumer_group, CG)
        keep = sorted(p for ps in group.target["a"].values() for p in ps)
        cg_heartbeat(gc, "a", 1, owned=keep)       # a lets it go, b takes it: Stable in epoch 2
        cg_heartbeat(gc, "b", 2)
        assert gc.call(lambda: gc.service.group_coordinator.consumer_group(CG).state) == "Stable"

    console_errors: list[str] = []
    with ThreadedCoordinator(http=True, topics={TOPIC: 3}, config=config, data_dir=tmp_path) as gc, \
            sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: console_errors.append(f"uncaught: {exc}"))
            page.goto(f"{gc.admin_url}/#group={CG}")
            page.wait_for_selector('#connection[data-connection="live"]', timeout=WAIT * 1000)
            # both group epochs of the run before, on the timeline and in the table, with who joined
            page.wait_for_selector('#history tbody tr[data-generation="2"]', timeout=WAIT * 1000)
            assert page.locator('#timeline .bar[data-generation="1"]').count() == 1
            assert page.locator('#timeline .bar[data-generation="2"]').count() == 1
            assert page.locator('#timeline .marker.join[data-member="a"]').count() == 1
            assert page.locator('#timeline .marker.join[data-member="b"]').count() == 1
            first = page.locator('#history tbody tr[data-generation="1"]')
            assert "member_joined" in first.inner_text() and f"{CG}-a" in first.inner_text()
            assert f"{CG}-b" in page.locator('#history tbody tr[data-generation="2"]').inner_text()
            # the page was not open then: what moved is not known, and it says so
            assert moved_cell(page, 1).get_attribute("title") == MOVED_NOT_SEEN.format(1)

            out = artifacts_dir()
            out.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out / "web-page-after-restart.png"), full_page=True)
            assert console_errors == []
        finally:
            browser.close()
