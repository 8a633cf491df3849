"""test_ddp.py - DistributedDataParallel over the "ccomm" backend (examples/torch/ddp_train.py).

  determinism  20 steps from a fixed seed on 4 ranks, twice: the final parameters are
               bitwise identical on every rank and in both runs; the final loss is within
               1e-5 of the same run on gloo.
  hang         4 ranks, rank 2 stops at step 5: the others raise RuntimeError naming the op,
               its sequence number, the group and rank 2 (the rank waited for) within the
               timeout; every rank dumps, and `ccdump diagnose` names rank 2 and PyTorch's
               group name.
  kill         4 ranks, rank 1 is SIGKILLed mid-step: the others fail naming rank 1, none
               hangs.

Usage: test_ddp.py [determinism|hang|kill]...  (all by default)
"""
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

EXAMPLE = os.path.join(HERE, "..", "..", "examples", "torch", "ddp_train.py")
BUILD = os.environ.get("CCTEST_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))


def final_loss(ranks):
    m = re.search(r"final loss ([0-9.eE+-]+)", ranks[0].out)
    return float(m.group(1)) if m else None


def determinism(tmp):
    import torch
    n, runs = 4, []
    for i, backend in enumerate(["ccomm", "ccomm", "gloo"]):
        save = os.path.join(tmp, "run%d" % i)
        env = {"CCOMM_DUMP_DIR": tmp}
        ranks = harness.run(EXAMPLE, n, ["--backend", backend, "--steps", 20, "--save", save],
                            env=env, timeout=180)
        if not harness.report(ranks, "ddp %s run %d" % (backend, i)):
            return False
        params = [torch.load("%s.rank%d.pt" % (save, r)) for r in range(n)]
        runs.append((backend, final_loss(ranks), params))
    ok = True
    for backend, loss, params in runs[:2]:
        for r in range(1, n):
            for k in params[0]:
                if not torch.equal(params[0][k], params[r][k]):
                    print("ddp: %s parameter %s differs between rank 0 and rank %d" % (backend, k, r))
                    ok = False
    for k in runs[0][2][0]:
        if not torch.equal(runs[0][2][0][k], runs[1][2][0][k]):
            print("ddp: parameter %s differs between two ccomm runs" % k)
            ok = False
    lc, lg = runs[0][1], runs[2][1]
    if lc is None or lg is None or abs(lc - lg) > 1e-5:
        print("ddp: final loss %s on ccomm, %s on gloo: not within 1e-5" % (lc, lg))
        ok = False
    print("determinism: %s (final loss ccomm %s, gloo %s)" % ("ok" if ok else "FAILED", lc, lg))
    return ok


def hang(tmp):
    n, stuck, timeout = 4, 2, 8
    # rank 0 hosts the store; it need not wait long at exit for the stuck rank to leave
    env = {"CCOMM_DUMP_DIR": tmp, "CCOMM_STORE_LINGER": "2"}
    t0 = time.monotonic()
    ranks = harness.start(EXAMPLE, n, ["--steps", 12, "--hang-rank", stuck, "--hang-step", 5,
                                       "--timeout", timeout, "--hang-seconds", 300], env=env)
    others = [k for k in ranks if k.rank != stuck]
    harness.finish(others, timeout + 60)
    took = time.monotonic() - t0
    ok = True
    for k in others:
        want = [r"step 5 failed: ccomm: all_reduce \(collective #\d+\) on process group "
                r"0:default_pg", "ERR_TIMEOUT", "ccdump diagnose",
                r"rank %d was waiting for rank %d \(comm rank %d, world rank %d\)"
                % (k.rank, stuck, stuck, stuck)]
        if k.rc != 1 or not all(re.search(w, k.err) for w in want):
            print("hang: rank %d exit %s, its error does not name op, seq, group and the rank "
                  "waited for:" % (k.rank, k.rc))
            sys.stdout.write(k.err[-3000:])
            ok = False
    if took > timeout + 45:
        print("hang: the other ranks took %.1f s to fail (timeout %d s)" % (took, timeout))
        ok = False
    # the stuck rank's watchdog dumped on the job's request while it slept
    jobs = glob.glob(os.path.join(tmp, "*"))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (
            len(jobs) == 1 and os.path.exists(os.path.join(jobs[0], "rank%d.json" % stuck))):
        time.sleep(0.2)
        jobs = glob.glob(os.path.join(tmp, "*"))
    ranks[stuck].proc.kill()
    harness.finish([ranks[stuck]], 30)
    if len(jobs) != 1:
        print("hang: expected one job folder of dumps in %s, found %s" % (tmp, jobs))
        return False
    for r in range(n):
        if not os.path.exists(os.path.join(jobs[0], "rank%d.json" % r)):
            print("hang: rank %d wrote no dump in %s (%s)" % (r, jobs[0], os.listdir(jobs[0])))
            ok = False
    d = subprocess.run([os.path.join(BUILD, "bin", "ccdump"), "diagnose", jobs[0]],
                       capture_output=True, text=True, timeout=60)
    verdict = [l for l in d.stdout.splitlines() if l.startswith("verdict")]
    if not verdict or "rank %d never entered" % stuck not in verdict[0] or \
            "0:default_pg" not in verdict[0]:
        print("hang: ccdump diagnose does not name rank %d and 0:default_pg:\n%s%s"
              % (stuck, d.stdout, d.stderr))
        ok = False
    print("hang: %s in %.1f s; %s" % ("ok" if ok else "FAILED", took, verdict[0] if verdict else ""))
    return ok


def kill(tmp):
    n, victim = 4, 1
    t0 = time.monotonic()
    ranks = harness.run(EXAMPLE, n, ["--steps", 12, "--kill-rank", victim, "--hang-step", 5,
                                     "--timeout", 120], env={"CCOMM_DUMP_DIR": tmp, "CCOMM_STORE_LINGER": "2"},
                         timeout=90)
    took = time.monotonic() - t0
    ok = ranks[victim].rc == -9
    for k in ranks:
        if k.rank == victim:
            continue
        named = "rank %d was waiting for rank %d (comm rank %d, world rank %d)" % (
            k.rank, victim, victim, victim)
        if k.rc != 1 or "ERR_PEER_LOST" not in k.err or named not in k.err:
            print("kill: rank %d exit %s (want 1 with ERR_PEER_LOST and %r)"
                  % (k.rank, k.rc, named))
            sys.stdout.write(k.err[-2000:])
            ok = False
    print("kill: %s in %.1f s (ranks' exits %s)" % ("ok" if ok else "FAILED", took,
                                                   [k.rc for k in ranks]))
    return ok


def main():
    parts = sys.argv[1:] or ["determinism", "hang", "kill"]
    failed = 0
    for p in parts:
        with tempfile.TemporaryDirectory() as tmp:
            failed += not {"determinism": determinism, "hang": hang, "kill": kill}[p](tmp)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
