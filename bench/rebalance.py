"""The coordinator's cost of one rebalance of one big group, in virtual time.

The sans-I/O Service (handlers and group coordinator) on a fake clock, as the simulator drives it
(sim/simulate.py), with no member cores: the requests are made here. A group of N members
forms (JoinGroup without and with the member id, the initial delay, SyncGroup), then the round
measured, as a steady-state rebalance goes:

  join   the leader rejoins (a rebalance starts), the N-1 others' heartbeats get
         REBALANCE_IN_PROGRESS, they rejoin, and the last JoinGroup completes the join phase:
         N responses, the leader's with every member's subscription;
  sync   N-1 SyncGroups park, the leader's brings N assignments, and N responses go out;
  beat   N heartbeats of the Stable group.

Each step's wall time over N is its cost per member: a step linear in N keeps it flat from 1,000
to 20,000 members, one quadratic in N makes it grow with N. With --codec, each request is decoded
from bytes and each response encoded, as the TCP server does (requests are encoded beforehand,
outside the time). Each size runs --rounds rounds and keeps each step's fastest.

    python bench/rebalance.py [--members 1000 2000 5000 10000 20000] [--partitions P] [--codec]
                              [--rounds 3] [--profile N]

The group and its round are tests/sim/rebalance_round.py's (``lines(n)`` there counts the
coordinator's executed lines of one round, the measure tests/sim/test_rebalance_cost.py compares).
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "sim"))
from rebalance_round import Group, lines  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, nargs="+", default=[1000, 2000, 5000, 10000, 20000])
    ap.add_argument("--partitions", type=int, default=None, help="default: min(members, 1000)")
    ap.add_argument("--codec", action="store_true", help="decode each request, encode each response")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gc", choices=["on", "frozen", "off"], default="frozen",
                    help="Python's cyclic GC in the rounds: on; frozen (default: what the group was made of is "
                         "moved out of the collector's way by gc.freeze(), so that its collections walk only "
                         "what the round makes, as in a daemon that has run for a while); off")
    ap.add_argument("--lines", action="store_true",
                    help="also count the coordinator's executed lines of a round per member (sys.settrace: slow)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="profile the rounds of the largest size, print the N costliest functions")
    args = ap.parse_args(argv)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; Python {platform.python_version()}; "
          f"{'with' if args.codec else 'without'} the codec; GC {args.gc}; fastest of {args.rounds} rounds")
    print("members | partitions | join ms | sync ms | beat ms | join us/member | sync us/member | beat us/member | "
          "form s")
    print("------- | ---------- | ------- | ------- | ------- | -------------- | -------------- | -------------- | "
          "------")
    rows = []
    for n in args.members:
        t0 = time.perf_counter()
        group = Group(n, args.partitions, codec=args.codec)
        form = time.perf_counter() - t0
        prof = None
        if args.profile and n == max(args.members):
            import cProfile
            prof = cProfile.Profile()
            prof.enable()
        best: dict[str, float] = {}
        gc.collect()
        if args.gc == "frozen":
            gc.freeze()
        elif args.gc == "off":
            gc.disable()
        for _ in range(args.rounds):
            for step, secs in group.round().items():
                best[step] = min(best.get(step, secs), secs)
        gc.enable()
        gc.unfreeze()
        if prof is not None:
            import pstats
            prof.disable()
        rows.append((n, best))
        print(f"{n} | {group.partitions} | {best['join'] * 1e3:.1f} | {best['sync'] * 1e3:.1f} | "
              f"{best['beat'] * 1e3:.1f} | {best['join'] / n * 1e6:.1f} | {best['sync'] / n * 1e6:.1f} | "
              f"{best['beat'] / n * 1e6:.1f} | {form:.1f}")
        sys.stdout.flush()
        if prof is not None:
            pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)
    if args.lines:
        print("\ncoordinator lines executed per member in a round (no timing: flat means linear):")
        for n in args.members:
            print(f"  {n:>6}: {lines(n, args.partitions) / n:.1f}")
            sys.stdout.flush()
    n0, b0 = rows[0]
    print(f"\nper-member cost against {n0} members (1.00: flat, linear in members):")
    for n, best in rows:
        print(f"  {n:>6}: " + ", ".join(f"{step} x{(best[step] / n) / (b0[step] / n0):.2f}" for step in best))


if __name__ == "__main__":
    main()
