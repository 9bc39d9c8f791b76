#!/usr/bin/env python
"""Fuzz the Kafka codec for longer than the test suite does.

    .venv/bin/python bench/fuzz_codec.py 60s        # run for about 60 seconds
    .venv/bin/python bench/fuzz_codec.py 500000     # run about 500000 cases
    .venv/bin/python bench/fuzz_codec.py 60s --seed 7

The same cases and checks as tests/protocol/test_fuzz.py (they live in
tests/protocol/fuzzcases.py), in rounds: every request and response of every API
version truncated, corrupted, padded with garbage, its lengths rewritten to negative
and huge values (allocation and time measured), its nullable structs' presence markers
rewritten, plus whole request and response frames. Round r draws fresh valid messages (hypothesis seed = base seed + r) and
more mutations per message than the suite. Prints cases/s per round and every
failure (the first few in full); exits 1 if anything failed. Not part of the suite.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "tests", "protocol"))

import fuzzcases as fc  # noqa: E402
from groupcoord.protocol.messages import APIS  # noqa: E402


def parse_budget(text: str) -> tuple[int | None, float | None]:
    """'60s' -> (None, 60.0); '100000' -> (100000, None)."""
    if text.endswith("s"):
        return None, float(text[:-1])
    return int(text), None


def one_round(seed: int, report) -> int:
    """All specs once with the given seed; returns the number of cases run."""
    total = 0
    jobs = []
    for spec, v in fc.SPECS:
        jobs += [
            (f"truncate {fc.spec_id(spec, v)}", lambda s=spec, v=v: fc.run_truncations(s, v, seed, n_msgs=4, limit=256)),
            (f"flip {fc.spec_id(spec, v)}", lambda s=spec, v=v: fc.run_bit_flips(s, v, seed, n_msgs=4, per_msg=64)),
            (f"random {fc.spec_id(spec, v)}", lambda s=spec, v=v: fc.run_random_bytes(s, v, seed, n=64)),
            (f"trailing {fc.spec_id(spec, v)}", lambda s=spec, v=v: fc.run_trailing(s, v, seed, n_msgs=4, per_msg=4)),
        ]
        if fc.has_markers(spec.struct(v)):
            jobs.append((f"markers {fc.spec_id(spec, v)}",
                         lambda s=spec, v=v: fc.run_marker_rewrites(s, v, seed, n_msgs=8)))
        if fc.has_length_slots(spec.struct(v)):
            jobs.append((f"lengths {fc.spec_id(spec, v)}",
                         lambda s=spec, v=v: fc.run_length_rewrites(s, v, seed, n_msgs=4, max_slots=64)[0]))
    for key, api in sorted(APIS.items()):
        for v in api.versions:
            jobs.append((f"request frames {api.name} v{v}", lambda k=key, v=v: fc.run_request_frames(k, v, seed, flips=48, limit=256)))
            jobs.append((f"response frames {api.name} v{v}", lambda k=key, v=v: fc.run_response_frames(k, v, seed, flips=48, limit=256)))
    jobs.append(("random request frames", lambda: fc.run_random_request_frames(fc.rng_for(seed, "random-frames"), 20000)))
    for name, job in jobs:
        try:
            total += job()
        except AssertionError as exc:
            report(name, exc)
        except Exception as exc:  # noqa: BLE001 -- a crash of the harness is a failure too
            report(name, exc, traceback.format_exc())
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("budget", nargs="?", default="30s", help="number of cases, or seconds with an 's' suffix (default 30s)")
    ap.add_argument("--seed", type=int, default=fc.SEED, help=f"base seed (default {fc.SEED}, the test suite's)")
    ap.add_argument("--show", type=int, default=5, help="failures printed in full (default 5)")
    args = ap.parse_args(argv)
    max_cases, max_seconds = parse_budget(args.budget)

    failures: list[str] = []

    def report(name, exc, tb=None):
        failures.append(name)
        if len(failures) <= args.show:
            print(f"FAIL {name}:\n{exc}\n{tb or ''}", flush=True)
        else:
            print(f"FAIL {name}: {str(exc).splitlines()[0][:200]}", flush=True)

    start = time.perf_counter()
    cases, rnd = 0, 0
    while True:
        t0 = time.perf_counter()
        n = one_round(args.seed + rnd, report)
        dt = time.perf_counter() - t0
        cases += n
        rnd += 1
        elapsed = time.perf_counter() - start
        print(f"round {rnd} (seed {args.seed + rnd - 1}): {n} cases in {dt:.1f} s = {n / dt:,.0f} cases/s; "
              f"total {cases} cases, {len(failures)} failures, {elapsed:.0f} s", flush=True)
        if max_cases is not None and cases >= max_cases:
            break
        if max_seconds is not None and elapsed + dt > max_seconds:
            break
    elapsed = time.perf_counter() - start
    print(f"done: {cases} cases in {elapsed:.1f} s ({cases / elapsed:,.0f} cases/s including message generation), "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
