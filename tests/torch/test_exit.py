"""test_exit.py - Python exits while the "ccomm" group's completion thread still has works
and a Python post hook to run (exit_worker.py, 2 ranks, several rounds): every rank must end
with status 0, never by std::terminate (a thread that asks for the GIL while Python
finalizes is ended by pthread_exit, whose unwinding C++ cannot pass)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402


def main():
    rounds = int(os.environ.get("CCTEST_EXIT_ROUNDS", "6"))
    bad = 0
    for i in range(rounds):
        ranks = harness.run(os.path.join(HERE, "exit_worker.py"), 2, [400], timeout=120)
        for k in ranks:
            if k.rc != 0 or "terminate called" in k.err:
                bad += 1
                print("round %d rank %d: exit %s\n%s" % (i, k.rank, k.rc, k.err[-1500:]))
    print("exit: %s (%d rounds)" % ("ok" if not bad else "FAILED", rounds))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
