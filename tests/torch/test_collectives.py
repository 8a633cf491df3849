"""test_collectives.py - the collective matrix of the "ccomm" backend against exact
references and gloo (coll_worker.py), on 2 and 4 ranks, over shm and TCP.

Also holds the job to what a passing job must look like: every rank exits 0, no rank logs
an ERROR line, and the whole job ends well within the store's linger (10 s): rank 0, which
hosts ccomm's store, must not wait for its own watchdog at exit.
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "coll_worker.py")
# (ranks, transport, rounds): sampled so that CI stays within a minute or two
CONFIGS = [(2, "auto", 3), (4, "auto", 2), (4, "tcp", 1), (2, "tcp", 1)]


def main():
    failed = 0
    only = sys.argv[1:]
    for n, transport, rounds in CONFIGS:
        name = "%d ranks %s" % (n, transport)
        if only and name.replace(" ", "_") not in only:
            continue
        with tempfile.TemporaryDirectory() as d:
            env = {"CCOMM_TRANSPORT": transport, "CCOMM_DUMP_DIR": d, "CCOMM_LOG_LEVEL": "WARN"}
            t0 = time.monotonic()
            ranks = harness.run(WORKER, n, [rounds], env=env, timeout=240)
            took = time.monotonic() - t0
        ok = harness.report(ranks, name)
        errors = [l for k in ranks for l in k.err.splitlines() if " ERROR " in l]
        if ok and errors:
            print("%s: a passing job logged errors:\n  %s" % (name, "\n  ".join(errors[:5])))
            ok = False
        slow = sum(1 for k in ranks if "checks passed" in k.out) and took > 60
        if ok and slow:
            print("%s: the job took %.1f s" % (name, took))
            ok = False
        print("%s: %s in %.1f s (%s)" % (name, "ok" if ok else "FAILED", took,
                                         "; ".join(k.out.strip().splitlines()[-1] for k in ranks
                                                   if k.out.strip())))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
