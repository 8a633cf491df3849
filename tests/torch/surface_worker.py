"""surface_worker.py - one rank of test_surface.py: ccomm.torch's Python surface (dump,
ring_path, pre/post hooks), Work objects, the group timeout, and a broken group failing
later calls at once."""
import json
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import ccomm.torch as ct


def fail(msg):
    raise AssertionError("rank %d: %s" % (dist.get_rank(), msg))


def hooks():
    pre, post = [], []
    ct.register_pre_hook(None, pre.append)
    ct.register_post_hook(None, post.append)
    t = torch.ones(10, dtype=torch.float64)
    w = dist.all_reduce(t, async_op=True)
    w.wait()
    dist.broadcast(t, 0)
    # Post hooks run on the completion thread; poll (bounded) rather than sleep a fixed time.
    for _ in range(250):
        if [r["name"] for r in post][-2:] == ["all_reduce", "broadcast"]:
            break
        time.sleep(0.02)
    names = [r["name"] for r in post]
    if names[-2:] != ["all_reduce", "broadcast"]:
        fail("post hook records %r" % names)
    r = post[-2]
    if r["status"] != "OK" or r["dtype"] != "f64" or r["in_count"] != 10 or r["op"] != "sum" \
            or r["group"] != "0:default_pg" or r["duration_us"] is None or r["duration_us"] < 0:
        fail("post hook record %r" % r)
    if post[-1]["seq"] != r["seq"] + 1:
        fail("post hook seqs %d then %d" % (r["seq"], post[-1]["seq"]))
    if [p["name"] for p in pre][-2:] != ["all_reduce", "broadcast"] or pre[-1]["status"] != "INPROGRESS":
        fail("pre hook records %r" % pre[-2:])
    try:
        ct.register_post_hook(None, 42)
    except TypeError:
        pass
    else:
        fail("register_post_hook accepted 42")


def work_objects():
    me = dist.get_rank()
    t = torch.full((4,), float(me + 1))
    w = dist.all_reduce(t, async_op=True)
    fut = w.get_future()
    got = fut.wait()
    # (Work.exception() has no Python binding that works in torch 1.13, for any backend)
    if not w.is_completed() or not w.is_success():
        fail("work state after its future completed")
    if not torch.equal(got[0], t) or t[0].item() != 3.0:
        fail("future value %r, tensor %r" % (got, t))
    # then-callbacks run once the op ended, as DDP's comm hooks rely on
    chained = dist.all_reduce(torch.ones(2), async_op=True).get_future().then(
        lambda f: f.value()[0] * 10)
    if chained.wait()[0].item() != 20.0:
        fail("chained future gave %r" % chained.wait())
    r = torch.zeros(3)
    if me == 0:
        dist.send(torch.arange(3.0), 1)
    else:
        w = dist.irecv(r, 0)
        w.wait()
        if w.source_rank() != 0 or r.tolist() != [0.0, 1.0, 2.0]:
            fail("irecv source %d data %r" % (w.source_rank(), r))


def dump_and_ring(tmp):
    me = dist.get_rank()
    ring = ct.ring_path()
    if not ring or not os.path.exists(ring):
        fail("ring_path %r does not exist" % ring)
    path = os.path.join(tmp, "mine.%d.json" % me)
    ct.dump(path)
    with open(path) as f:
        d = json.load(f)
    groups = {tuple(e["process_group"]) for e in d["entries"]}
    if not any(g[1] == "0:default_pg" for g in groups):
        fail("dump's process groups %r" % groups)
    names = {e["profiling_name"] for e in d["entries"]}
    if not {"ccomm:all_reduce", "ccomm:broadcast"} <= names:
        fail("dump's profiling names %r" % names)


def broken_group():
    """Rank 1 skips one all_reduce: rank 0 times out within the group's timeout (3 s), and
    its next call fails at once."""
    me = dist.get_rank()
    dist.barrier()
    if me == 1:
        time.sleep(6)
        return
    t0 = time.monotonic()
    try:
        dist.all_reduce(torch.ones(1))
    except RuntimeError as e:
        took = time.monotonic() - t0
        if "ERR_TIMEOUT" not in str(e) or not 2.0 < took < 8.0:
            fail("timeout after %.1f s: %s" % (took, e))
    else:
        fail("all_reduce with a missing rank returned")
    t0 = time.monotonic()
    try:
        dist.all_reduce(torch.ones(1))
    except RuntimeError as e:
        if time.monotonic() - t0 > 0.5 or "broken" not in str(e):
            fail("a call on the broken group took %.2f s: %s" % (time.monotonic() - t0, e))
    else:
        fail("a call on the broken group succeeded")


def main():
    tmp = sys.argv[1]
    dist.init_process_group("ccomm", timeout=timedelta(seconds=3))
    hooks()
    work_objects()
    dump_and_ring(tmp)
    broken_group()
    print("rank %d: surface ok" % dist.get_rank(), flush=True)


if __name__ == "__main__":
    main()
