"""test_surface.py - ccomm.torch's Python surface and Work objects on 2 ranks
(surface_worker.py): hooks, dump, ring_path, futures, sourceRank, the group timeout, and a
broken group failing the next call at once."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402


def main():
    with tempfile.TemporaryDirectory() as tmp:
        ranks = harness.run(os.path.join(HERE, "surface_worker.py"), 2, [tmp],
                            env={"CCOMM_DUMP_DIR": tmp, "CCOMM_STORE_LINGER": "2"}, timeout=120)
    ok = harness.report(ranks, "surface")
    print("surface: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
