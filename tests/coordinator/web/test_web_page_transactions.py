"""The live web page's Transactions panel, in Debian's chromium driven by Playwright: a transactional
producer (tests/coordinator/txn_client.py, its requests handed to the running service) begins a
transaction, writes into two partitions and commits a group's offsets in it: the panel shows it open
with its producer id and epoch, its partitions and pending offsets; it commits and the panel lists it
among the recently ended; a second one is aborted through the admin API and shows as fenced (admin)
and aborted. The transactions are read from ``/api/transactions`` and followed by the event stream.

The screenshot goes to ``$GROUPCOORD_ARTIFACTS/web-page-transactions.png`` (default: ``test-artifacts/``)."""
from __future__ import annotations

import json
import os
import urllib.request

import pytest
from test_web_page import CHROMIUM, CHROMIUM_ARGS, WAIT, artifacts_dir
from txn_client import TxnClient

from groupcoord.coordinator.embed import ThreadedCoordinator
from groupcoord.protocol.errors import ErrorCode as E

TOPIC = "payments"

OPEN_ROWS = """() => [...document.querySelectorAll('#txn-open tbody tr[data-txn]')].map((tr) => ({
  id: tr.dataset.txn, state: tr.dataset.state, producer: Number(tr.dataset.producerId), epoch: Number(tr.dataset.epoch),
  partitions: Number(tr.dataset.partitions), pending: Number(tr.dataset.pendingOffsets),
  late: tr.dataset.pastTimeout === "true"}))"""

RECENT = """() => [...document.querySelectorAll('#txn-recent li[data-txn]')].map((li) =>
  [li.dataset.txn, li.dataset.event, li.dataset.result || li.dataset.cause])"""


def wait_for(page, script: str, want, what: str) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(f"(want) => JSON.stringify(({script})()) === JSON.stringify(want)", arg=want,
                               timeout=WAIT * 1000)
    except PlaywrightTimeout:
        raise AssertionError(f"{what}: the page shows {page.evaluate(script)}, not {want}") from None


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no chromium at {CHROMIUM} (Debian package 'chromium')")
def test_the_page_shows_transactions_open_then_ended():
    from playwright.sync_api import sync_playwright

    console_errors: list[str] = []
    with ThreadedCoordinator(http=True, topics={TOPIC: 2}) as gc:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda exc: console_errors.append(f"uncaught: {exc}"))
                page.goto(gc.admin_url + "/")
                page.wait_for_selector('#connection[data-connection="live"]', timeout=WAIT * 1000)
                assert page.locator("#txn-card").is_hidden()       # no transactional id yet

                # a transaction: records in both partitions, a group's offset pending in it
                tx = TxnClient(gc.service, "checkout", run=gc.call)
                assert tx.init(timeout_ms=120_000) == E.NONE
                assert tx.add_partitions(TOPIC, 0, 1) == {(TOPIC, 0): E.NONE, (TOPIC, 1): E.NONE}
                assert tx.produce(TOPIC, 0, 3)[0] == tx.produce(TOPIC, 1, 2)[0] == E.NONE
                assert tx.add_offsets("ledger") == E.NONE
                assert tx.commit_offsets("ledger", {(TOPIC, 0): 3}) == [E.NONE]
                wait_for(page, OPEN_ROWS, [{"id": "checkout", "state": "Ongoing", "producer": tx.producer_id,
                                            "epoch": tx.producer_epoch, "partitions": 3, "pending": 1,
                                            "late": False}], "the open transaction")
                assert "1 open transaction" in page.locator("#cluster-summary").inner_text()
                assert "of 2 min 0 s" in page.locator('#txn-open tr[data-txn="checkout"]').inner_text()

                out = artifacts_dir()
                out.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out / "web-page-transactions.png"), full_page=True)

                # it commits: no longer open, listed as committed
                assert tx.end(commit=True) == E.NONE
                gc.call(gc.service.advance)                 # its markers
                wait_for(page, OPEN_ROWS, [], "no open transaction after the commit")
                wait_for(page, RECENT, [["checkout", "transaction.completed", "commit"]], "the commit")
                assert page.locator("#txn-empty").is_visible()

                # another, aborted by an operator: fenced, then aborted
                stuck = TxnClient(gc.service, "stuck", run=gc.call, conn=9)
                assert stuck.init() == E.NONE and stuck.add_partitions(TOPIC, 1) == {(TOPIC, 1): E.NONE}
                wait_for(page, f"() => ({OPEN_ROWS})().map((r) => r.id)", ["stuck"], "the second transaction")
                request = urllib.request.Request(f"{gc.admin_url}/api/transactions/stuck/abort", method="POST")
                with urllib.request.urlopen(request, timeout=10) as r:
                    assert json.load(r)["producer_epoch"] == stuck.producer_epoch + 1
                gc.call(gc.service.advance)
                wait_for(page, OPEN_ROWS, [], "no open transaction after the abort")
                wait_for(page, RECENT, [["stuck", "transaction.completed", "abort"],
                                        ["stuck", "transaction.fenced", "admin"],
                                        ["checkout", "transaction.completed", "commit"]], "the abort")
                assert console_errors == []
            finally:
                browser.close()
