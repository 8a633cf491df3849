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
    """A port P with P and P + 1 both free now (torch's store takes MASTER_PORT, ccomm's the port
    after it), below the kernel's ephemeral range, where another process's outgoing connection
    cannot take it between this check and the ranks' listen."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            eph = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        eph = 32768
    base, span = (10000, eph - 10002) if eph > 12000 else (61000, 4000)
    start = base + os.getpid() % span
    for i in range(0, 2 * 500, 2):
        port = base + (start - base + i) % span
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("0.0.0.0", port))
                b.bind(("0.0.0.0", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no free port pair below %d" % eph)


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
