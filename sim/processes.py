"""A real-time fleet over several processes (``groupcoord fleet --processes N``).

Each process has its own event loop and its own file descriptors. The parent runs what a fleet
runs once: the in-process coordinator (without ``--bootstrap``) or the daemon's event stream
(``--admin``), the cluster-wide actions of the timeline, the progress bar, ``--until-stable``,
the event log and the summary. Child j of N runs the shard (i + j * M, M * N) of the members when
the parent is the shard i/M of a scenario (``--shard i/M``; else i = 0, M = 1): the members whose
index is j mod N. Every process follows the whole timeline (a ``count`` pick draws from the
same live members everywhere) and acts on its own members only (:meth:`.model.Driver.owns`).

The children start the scenario's clock at one wall time the parent sets once they are all
ready, and send the parent, every quarter of a second, their members' events (the parent merges
them into one log by ``ts_ms``), how many members are live and stable, whether their timeline
is over and, once it is, what the member-side check needs (:func:`.fleet.member_report`). The
parent ends the run (duration, or every group stable for ``hold_s``), asks the children to stop,
and takes their final reports and last events.
"""
from __future__ import annotations

import asyncio
import multiprocessing
import signal
import threading
import time

from .fleet import FleetRunner, check_reports, member_report, raise_fd_limit
from .scenario import Scenario
from .simulate import find_group

#: a child that is not ready this long after it was started fails the run
READY_TIMEOUT_S = 120.0
#: how long the parent waits for a stopped child's last report
DONE_TIMEOUT_S = 120.0
#: the clock starts this long after every child is ready (their timelines are planned meanwhile)
START_DELAY_S = 0.5


def child_shards(shard: tuple[int, int] | None, processes: int) -> list[tuple[int, int]]:
    """The shards of a fleet's processes: (i + j * m, m * processes) for j < processes, where
    (i, m) is the fleet's own shard ((0, 1) for the whole scenario). Together they own exactly
    the members the fleet's shard owns: index = i (mod m) and index // m = j (mod processes)."""
    i, m = shard if shard is not None else (0, 1)
    return [(i + j * m, m * processes) for j in range(processes)]


class ParentRunner(FleetRunner):
    """The parent of a fleet over several processes: runs no member itself."""

    def __init__(self, scenario: Scenario, seed: int, *, processes: int, shard: tuple[int, int] | None = None,
                 log_level: str = "error", **kw):
        super().__init__(scenario, seed, shard=shard, cluster_actions=shard is None or shard[0] == 0, **kw)
        self.processes = processes
        self.complete = shard is None         # the members of every process are the whole scenario
        self.log_level = log_level
        self._conns: list = []
        self._procs: list = []
        self._status: list[dict] = []         # each child's last status
        self._done: list[dict | None] = []
        self._gone: list[bool] = []           # the child's pipe has closed
        self._failure: str | None = None

    def owns(self, c) -> bool:
        return False

    # ---- the children ---------------------------------------------------------------------
    async def _start_clock(self) -> float:
        ctx = multiprocessing.get_context("spawn")
        shards = child_shards(self.shard, self.processes)
        for shard in shards:
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=_child, name=f"groupcoord-fleet-{shard[0]}/{shard[1]}", daemon=True,
                               args=(theirs, self.scenario, self.seed, shard, self.bootstrap,
                                     self.share_connections, self.log_level))
            proc.start()
            theirs.close()
            self._conns.append(mine)
            self._procs.append(proc)
            self._status.append({})
            self._done.append(None)
            self._gone.append(False)
        await self._loop.run_in_executor(None, self._await_ready)
        start = self.start_at if self.start_at is not None else time.time() + START_DELAY_S
        for conn in self._conns:
            conn.send(("start", start))
        for j, conn in enumerate(self._conns):
            threading.Thread(target=self._read, args=(j, conn), name=f"groupcoord-fleet-reader-{j}",
                             daemon=True).start()
        return self._loop.time() + (start - time.time())

    def _await_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        for j, conn in enumerate(self._conns):
            if not conn.poll(max(0.0, deadline - time.monotonic())):
                self._kill_children()
                raise RuntimeError(f"fleet process {j} was not ready within {READY_TIMEOUT_S:.0f} s")
            try:
                msg = conn.recv()
            except EOFError:
                msg = ("error", f"fleet process {j} ended before it was ready")
            if msg[0] != "ready":
                self._kill_children()
                raise RuntimeError(f"fleet process {j}: " +
                                   (msg[1] if msg[0] == "error" else f"unexpected message {msg[0]!r}"))

    def _read(self, j: int, conn) -> None:
        """A reader thread per child: its messages go to the loop."""
        try:
            while True:
                msg = conn.recv()
                self._loop.call_soon_threadsafe(self._on_message, j, msg)
                if msg[0] in ("done", "error"):
                    return
        except (EOFError, OSError):
            pass
        try:
            self._loop.call_soon_threadsafe(self._on_gone, j)
        except RuntimeError:          # the loop has closed
            pass

    def _on_message(self, j: int, msg: tuple) -> None:
        kind = msg[0]
        if kind == "status":
            self.events += msg[1]
            self._status[j] = msg[2]
        elif kind == "done":
            self.events += msg[1]
            self._status[j] = self._done[j] = msg[2]
            for note in msg[2].get("notes", []):
                if note not in self.notes:
                    self.notes.append(note)
        elif kind == "error":
            self._failure = self._failure or f"fleet process {j}: {msg[1]}"

    def _on_gone(self, j: int) -> None:
        self._gone[j] = True
        if self._done[j] is None and not self._stopping:
            self._failure = self._failure or f"fleet process {j} ended (exit code {self._procs[j].exitcode})"

    def _kill_children(self) -> None:
        for proc in self._procs:
            if proc.is_alive():
                proc.terminate()

    # ---- what the parent decides ------------------------------------------------------------
    def _should_end(self, elapsed: float) -> bool:
        if self._failure is not None:
            self.notes.append(self._failure)
            return True
        return super()._should_end(elapsed)

    def _timeline_over(self) -> bool:
        return super()._timeline_over() and all(s.get("timeline_over") for s in self._status)

    def _progress(self) -> tuple[int, int]:
        return (sum(s.get("stable", 0) for s in self._status), sum(s.get("live", 0) for s in self._status))

    def generations(self) -> dict[str, list[int]]:
        return {gid: sorted({g for s in self._status for g in s.get("reports", {}).get(gid, {}).get("generations", [])})
                for gid in self.scenario.group_ids()}

    def children_pids(self) -> list[int]:
        return [p.pid for p in self._procs if p.pid is not None]

    def checks(self) -> dict[str, str]:
        """Per group: the member-side check over every child's members (check_reports; with the
        in-process coordinator, its group must also be Stable with as many members)."""
        out = {}
        for gid in self.scenario.group_ids():
            reports = [s["reports"][gid] for s in self._status if gid in s.get("reports", {})]
            if len(reports) < len(self._status):
                out[gid] = "unsettled"
                continue
            check = check_reports(reports, self.topics, complete=self.complete)
            if check == "ok" and self.embedded is not None:
                group = find_group(self.embedded.service, gid)
                if group is None or group.state != "Stable" or \
                        len(group.members) != sum(r["members"] for r in reports):
                    check = "unsettled"
            out[gid] = check
        return out

    async def _finish(self) -> None:
        for j, conn in enumerate(self._conns):
            if not self._gone[j]:
                try:
                    conn.send(("stop",))
                except OSError:
                    pass
        deadline = self._loop.time() + DONE_TIMEOUT_S
        while self._loop.time() < deadline and \
                not all(d is not None or gone for d, gone in zip(self._done, self._gone)):
            await asyncio.sleep(0.05)
        missing = [j for j, d in enumerate(self._done) if d is None]
        for j in missing:
            note = f"fleet process {j}: no final report (its members are left out of the final check)"
            if self._failure is None or str(j) not in self._failure:
                self.notes.append(note)
            self._status[j] = {}
        if missing:
            self._status = [s for s in self._status if s]
        self.final = self.checks()
        self.final_generations = self.generations()
        self.final_running = {gid: sum(s.get("reports", {}).get(gid, {}).get("members", 0) for s in self._status)
                              for gid in self.scenario.group_ids()}
        await self.shutdown()
        for proc in self._procs:
            await self._loop.run_in_executor(None, proc.join, 10)
            if proc.is_alive():
                proc.terminate()
                await self._loop.run_in_executor(None, proc.join, 5)
        for conn in self._conns:
            conn.close()

    def client_count(self) -> int:
        return sum(d.get("clients", 0) for d in self._done if d is not None)

    def resolved(self) -> dict:
        d = super().resolved()
        d["processes"] = self.processes
        return d

    def summary(self, events: list[dict]) -> dict:
        out = super().summary(events)
        out["processes"] = self.processes
        return out


class ChildRunner(FleetRunner):
    """One process of a fleet over several processes: its shard of the members, driven by the
    parent through a pipe."""

    def __init__(self, conn, scenario: Scenario, seed: int, **kw):
        super().__init__(scenario, seed, cluster_actions=False, **kw)
        self.conn = conn
        self._stop_asked = False

    async def run(self) -> list[dict]:
        # the parent made the topics and streams the coordinator's events
        self._loop = asyncio.get_running_loop()
        return await self._run()

    async def _start_clock(self) -> float:
        self.conn.send(("ready",))
        msg = await self._loop.run_in_executor(None, self.conn.recv)
        if msg[0] != "start":
            raise RuntimeError(f"expected the start time, got {msg[0]!r}")
        return self._loop.time() + (msg[1] - time.time())

    def _should_end(self, elapsed: float) -> bool:
        try:
            while self.conn.poll():
                if self.conn.recv()[0] == "stop":
                    self._stop_asked = True
        except (EOFError, OSError):            # the parent is gone
            self._stop_asked = True
        # (the parent ends the run; the duration, with a margin, bounds it if the parent never does)
        return self._stop_asked or elapsed >= self.scenario.duration_s + DONE_TIMEOUT_S

    def _events(self) -> list[dict]:
        batch = list(self.events)
        del self.events[:]          # (the recorders hold this list's append)
        return batch

    def _reports(self) -> dict:
        return {gid: member_report(self._running_members(gid)) for gid in self.scenario.group_ids()}

    def _tick(self, elapsed: float) -> None:
        stable, live = self._progress()
        over = self._timeline_over()
        status = {"stable": stable, "live": live, "timeline_over": over}
        if over:
            status["reports"] = self._reports()
        self.conn.send(("status", self._events(), status))

    async def _finish(self) -> None:
        reports = self._reports()
        await self.shutdown()
        self.conn.send(("done", self._events(), {
            "reports": reports, "notes": list(self.notes), "clients": self.client_count(),
            "stable": 0, "live": 0, "timeline_over": True}))


def _child(conn, sc: Scenario, seed: int, shard: tuple[int, int], bootstrap: str, share_connections: bool,
           log_level: str) -> None:
    """A child process: its members until the parent says stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)       # the parent stops the run on ^C
    from .cli import configure_logging
    configure_logging(log_level)
    raise_fd_limit()
    runner = ChildRunner(conn, sc, seed, bootstrap=bootstrap, share_connections=share_connections, shard=shard)
    try:
        asyncio.run(runner.run())
    except BaseException as e:     # noqa: BLE001 - reported to the parent, which fails the run
        try:
            conn.send(("error", f"{type(e).__name__}: {e}"))
        except OSError:
            pass
    finally:
        conn.close()
