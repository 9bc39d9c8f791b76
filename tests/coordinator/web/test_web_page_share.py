"""The live web page on a share group (KIP-932), in Debian's chromium driven by Playwright: tagged
share, its group epochs, its members with the records each holds, and each share-partition's in-flight
records by state between its SPSO and SPEO, its delivery counts and who holds records; following the
service as a fault expires a member's locks. Records are acquired and acknowledged with ShareFetch and
ShareAcknowledge requests handed to the running service (tests/coordinator/share_client.py).

The screenshot goes to ``$GROUPCOORD_ARTIFACTS/web-page-share-group.png`` (default: ``test-artifacts/``)."""
from __future__ import annotations

import os

import pytest
from share_client import ACCEPT, REJECT, RELEASE, ShareClient, acquired
from test_web_page import CHROMIUM, CHROMIUM_ARGS, WAIT, artifacts_dir

from groupcoord.coordinator.embed import ThreadedCoordinator

GROUP = "jobs"
TOPIC = "tasks"

# each share-partition row as the page shows it
SHARE_ROWS = """() => [...document.querySelectorAll('#share-partitions tbody tr[data-partition]')].map((tr) => ({
  partition: Number(tr.dataset.partition), loaded: tr.dataset.loaded === "true",
  start: Number(tr.dataset.start), end: Number(tr.dataset.end),
  records: Object.fromEntries(["available", "acquired", "acknowledged", "archived"].map((s) => [s, Number(tr.dataset[s])])),
  deliveries: Object.fromEntries([...tr.querySelectorAll('.chip[data-delivery-count]')].map(
    (c) => [c.dataset.deliveryCount, Number(c.dataset.records)])),
  holders: Object.fromEntries([...tr.querySelectorAll('.chip[data-member]')].map((c) => [c.dataset.member, Number(c.dataset.records)])),
  segments: tr.querySelectorAll('.recbar span').length,
}))"""

MEMBER_HOLDS = """() => Object.fromEntries([...document.querySelectorAll('#members tbody tr[data-member]')].map(
  (tr) => [tr.dataset.member, Number(tr.dataset.holds)]))"""


def expected_rows(gc) -> list[dict]:
    """The share-partitions as the admin API gives them, in the page's terms."""
    from groupcoord.coordinator.admin.groups_api import share_partitions_json

    rows = []
    for sp in gc.call(share_partitions_json, gc.service, GROUP):
        deliveries = {str(d["delivery_count"]): sum(d[s] for s in ("available", "acquired", "acknowledged", "archived"))
                      for d in sp["delivery_counts"]}
        rows.append({"partition": sp["partition"], "loaded": sp["loaded"], "start": sp["start_offset"],
                     "end": sp["end_offset"], "records": sp["records"], "deliveries": deliveries,
                     "holders": {h["member_id"]: h["records"] for h in sp["holders"]},
                     "segments": sum(1 for n in sp["records"].values() if n)})
    return rows


def wait_for_rows(page, expected: list[dict]) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(f"(want) => JSON.stringify(({SHARE_ROWS})()) === JSON.stringify(want)",
                               arg=expected, timeout=WAIT * 1000)
    except PlaywrightTimeout:
        raise AssertionError(f"the page shows {page.evaluate(SHARE_ROWS)}, not {expected}") from None


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no chromium at {CHROMIUM} (Debian package 'chromium')")
def test_the_page_shows_a_share_groups_records_by_state():
    from playwright.sync_api import sync_playwright

    console_errors: list[str] = []
    with ThreadedCoordinator(http=True, topics={TOPIC: 2}) as gc:
        gc.call(gc.service.alter_group_configs, GROUP, {"share.auto.offset.reset": "earliest"})
        a = ShareClient(gc.service, run=gc.call, group=GROUP, topic=TOPIC, client_id="worker-a")
        b = ShareClient(gc.service, run=gc.call, group=GROUP, topic=TOPIC, client_id="worker-b", conn=2)
        a.join("a")
        b.join("b")
        a.produce(20, partition=0)
        a.produce(10, partition=1)
        # a takes everything; accepts 0-9 of partition 0, releases 10-14 (b takes them: a 2nd delivery) and
        # keeps 15-19; rejects 0-1 of partition 1 and keeps 2-9
        assert acquired(a.fetch("a", 0, partitions=(0, 1))) == [(0, 19, 1)]
        assert a.acknowledge("a", 1, {0: [(0, 9, ACCEPT), (10, 14, RELEASE)], 1: [(0, 1, REJECT)]})["error_code"] == 0
        assert acquired(b.fetch("b", 0, partitions=(0,))) == [(10, 14, 2)]

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda exc: console_errors.append(f"uncaught: {exc}"))
                page.goto(f"{gc.admin_url}/#group={GROUP}")
                page.wait_for_selector('#connection[data-connection="live"]', timeout=WAIT * 1000)
                page.wait_for_selector('#group-detail[data-type="share"][data-loaded="true"]', timeout=WAIT * 1000)

                first = expected_rows(gc)
                zero = first[0]
                assert (zero["start"], zero["end"], zero["records"], zero["deliveries"], zero["holders"]) == (
                    10, 19, {"available": 0, "acquired": 10, "acknowledged": 0, "archived": 0}, {"1": 5, "2": 5},
                    {"a": 5, "b": 5})
                assert first[1]["holders"] == {"a": 8}
                wait_for_rows(page, first)
                page.wait_for_function(f"(want) => JSON.stringify(({MEMBER_HOLDS})()) === JSON.stringify(want)",
                                       arg={"a": 13, "b": 5}, timeout=WAIT * 1000)
                assert page.locator("#share-card").is_visible() and not page.locator("#offsets-card").is_visible()
                assert page.locator(f'#group-list li[data-group="{GROUP}"][data-type="share"]').count() == 1
                assert page.locator(f'#group-list li[data-group="{GROUP}"] .type-tag').inner_text() == "share"
                facts = page.locator("#group-facts").inner_text()
                assert "share (KIP-932)" in facts and "Group epoch" in facts and "Delivery limit" in facts
                assert page.locator("#history-gen").inner_text() == "Group epoch"
                for member in ("a", "b"):          # the share.member_joined events, on the timeline
                    assert page.locator(f'#timeline .marker.join[data-member="{member}"]').count() == 1

                out = artifacts_dir()
                out.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out / "web-page-share-group.png"), full_page=True)

                # a fault expires a's locks: its records are available again, b alone holds some
                assert gc.call(gc.service.faults.expire_locks, GROUP, "a")["records"] == 13
                after = expected_rows(gc)
                assert after[0]["records"] == {"available": 5, "acquired": 5, "acknowledged": 0, "archived": 0}
                assert after[0]["holders"] == {"b": 5} and after[1]["holders"] == {}
                wait_for_rows(page, after)
                page.wait_for_function(f"(want) => JSON.stringify(({MEMBER_HOLDS})()) === JSON.stringify(want)",
                                       arg={"a": 0, "b": 5}, timeout=WAIT * 1000)
                assert console_errors == []
            finally:
                browser.close()
