"""harness.py - start N ranks of a torch.distributed test as separate processes.

Debian's torchrun fails on Python 3.11, so the tests start ranks themselves: each rank is
`python3 <script> <args>` with torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT). A rank reports by its exit status; the parent asserts. Every
launch is bounded by a timeout, after which every rank still running is killed.
"""
import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

PY = os.environ.get("CCOMM_TEST_PYTHON", "/usr/bin/python3")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rank:
    def __init__(self, rank, proc):
        self.rank, self.proc = rank, proc
        self.rc = None
        self.out = self.err = ""


_rings = []  # recorder directories this harness made, removed when the test's Python exits


def _rings_dir():
    """A recorder directory of this test's own: the rings a failing launch keeps (a hang, a
    kill: the ranks leave them for ccdump) go there, not into /dev/shm/ccomm-$UID."""
    if not _rings:
        _rings.append(tempfile.mkdtemp(prefix="ccomm-torch-fr-"))
        atexit.register(shutil.rmtree, _rings[0], True)
    return _rings[0]


def start(script, nranks, args=(), env=None, port=None):
    port = port or free_port()
    ranks = []
    if "CCOMM_RECORDER_DIR" not in os.environ and "CCOMM_RECORDER_DIR" not in (env or {}):
        env = dict(env or {}, CCOMM_RECORDER_DIR=_rings_dir())
    for r in range(nranks):
        e = dict(os.environ)
        e.update(RANK=str(r), WORLD_SIZE=str(nranks), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(nranks),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        e.update(env or {})
        p = subprocess.Popen([PY, script] + [str(a) for a in args], env=e, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        ranks.append(Rank(r, p))
    return ranks


def finish(ranks, timeout):
    """Wait for every rank up to `timeout` s in all; kill those still running (rc None)."""
    deadline = time.monotonic() + timeout
    for k in ranks:
        try:
            k.out, k.err = k.proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            k.rc = k.proc.returncode
        except subprocess.TimeoutExpired:
            k.proc.kill()
            k.out, k.err = k.proc.communicate()
            k.rc = None
    return ranks


def run(script, nranks, args=(), env=None, timeout=120):
    return finish(start(script, nranks, args, env), timeout)


def report(ranks, what):
    """Print each rank's output; return True when every rank exited 0."""
    ok = all(k.rc == 0 for k in ranks)
    for k in ranks:
        if not ok or os.environ.get("CCOMM_TEST_VERBOSE"):
            print("---- %s rank %d: exit %s" % (what, k.rank, "timeout (killed)" if k.rc is None
                                                else k.rc))
            sys.stdout.write(k.out[-4000:])
            sys.stdout.write(k.err[-4000:])
    return ok
