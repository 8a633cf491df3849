"""torch_cuda.py - the PyTorch backend "ccomm" on CUDA tensors, compared with the same ops on
CPU tensors (exact: small integers in every dtype).

    PYTHONPATH=build/python /usr/bin/python3 tests/gpu/torch_cuda.py [RUN ...]

Runs (all by default), each a job of its own ranks (tests/torch/harness.py):
  nccl1     1 rank, engine auto (NCCL where it loads): world size 1 on a one-GPU machine
  native2   2 ranks sharing device 0, NCCL hidden (CCOMM_NCCL_LIB=/nonexistent): the native
            CUDA engine, which takes several ranks per GPU (NCCL refuses two on one GPU)
  nccl2     2 ranks, one GPU each, engine auto (only with 2 GPUs or more)
Each rank all_reduces (sum, max, avg), broadcasts, all_gathers (list and into one tensor) and
reduce_scatters CUDA tensors, in place and non-contiguous (staged, copied back on the
stream), on the current stream and on a side stream, with a CPU op of the same group
between; the results must equal the CPU ops' on the same group. Exit 0 all passed, 1 a
failure, 77 ("skipped: no CUDA device") where torch.cuda.is_available() is false.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "torch"))

SKIP = 77


def fail(msg):
    import torch.distributed as dist
    raise AssertionError("rank %d: %s" % (dist.get_rank(), msg))


def same(what, got, want):
    if not (got.dtype == want.dtype and got.shape == want.shape
            and bool((got.cpu() == want).all())):
        fail("%s: cuda gave %r, cpu %r" % (what, got.cpu().tolist()[:8], want.tolist()[:8]))


def ops(dev, dtype, R):
    """Each op on CUDA tensors and on the same CPU tensors, compared."""
    import torch
    import torch.distributed as dist
    me, n = dist.get_rank(), dist.get_world_size()
    base = (torch.arange(24) % 7 + me).to(dtype)
    for op in (R.SUM, R.MAX) + ((R.AVG,) if dtype.is_floating_point and n > 1 else ()):
        c, g = base.clone(), base.clone().to(dev)
        dist.all_reduce(c, op=op)
        dist.all_reduce(g, op=op)
        same("all_reduce %s %s" % (op, dtype), g, c)
    # non-contiguous: staged into a packed copy, copied back on the stream after the op
    c = base.clone().view(4, 6).t()
    g = base.clone().to(dev).view(4, 6).t()
    dist.all_reduce(c)
    dist.all_reduce(g)
    same("all_reduce non-contiguous %s" % dtype, g, c)
    c, g = base.clone() * (me + 1), base.clone().to(dev) * (me + 1)
    dist.broadcast(c, n - 1)
    dist.broadcast(g, n - 1)
    same("broadcast %s" % dtype, g, c)
    cl = [torch.empty_like(base) for _ in range(n)]
    gl = [torch.empty_like(base, device=dev) for _ in range(n)]
    dist.all_gather(cl, base)
    dist.all_gather(gl, base.to(dev))
    for i in range(n):
        same("all_gather[%d] %s" % (i, dtype), gl[i], cl[i])
    co, go = torch.empty(n * 24, dtype=dtype), torch.empty(n * 24, dtype=dtype, device=dev)
    dist.all_gather_into_tensor(co, base)
    dist.all_gather_into_tensor(go, base.to(dev))
    same("all_gather_into_tensor %s" % dtype, go, co)
    src = torch.arange(n * 6).to(dtype) + me
    co, go = torch.empty(6, dtype=dtype), torch.empty(6, dtype=dtype, device=dev)
    dist.reduce_scatter_tensor(co, src)
    dist.reduce_scatter_tensor(go, src.to(dev))
    same("reduce_scatter_tensor %s" % dtype, go, co)


def streams(dev):
    """An op issued on a side stream is ordered on that stream: the kernel that fills the
    input before it and the one that reads the result after it see the right values."""
    import torch
    import torch.distributed as dist
    n = dist.get_world_size()
    s = torch.cuda.Stream(device=dev)
    with torch.cuda.stream(s):
        x = torch.empty(1 << 20, device=dev)
        x.fill_(1.0)                 # queued on s before the op
        w = dist.all_reduce(x, async_op=True)
        y = x * 2                    # queued on s after it
    w.wait()
    s.synchronize()
    if x[0].item() != n or y[-1].item() != 2 * n:
        fail("side stream: x %s y %s, expected %d and %d" % (x[0].item(), y[-1].item(), n, 2 * n))
    fut = dist.all_reduce(torch.ones(8, device=dev), async_op=True).get_future()
    if fut.wait()[0][0].item() != n:
        fail("future value %r" % fut.wait())


def mixed(dev):
    """CPU and CUDA ops on one group: each communicator orders its own, both complete."""
    import torch
    import torch.distributed as dist
    n = dist.get_world_size()
    g, c = torch.ones(4, device=dev), torch.ones(4)
    wg = dist.all_reduce(g, async_op=True)
    wc = dist.all_reduce(c, async_op=True)
    wg.wait()
    wc.wait()
    if g.cpu().tolist() != [n] * 4 or c.tolist() != [n] * 4:
        fail("mixed cpu/cuda: %r %r" % (g.tolist(), c.tolist()))


def worker(device_of_rank):
    import torch
    import torch.distributed as dist
    import ccomm.torch as ct
    from ccomm import _C
    if not _C.has_cuda():
        raise AssertionError("torch has CUDA but ccomm._C was built without it (%s)"
                             % _C.__file__)
    dist.init_process_group("ccomm")
    me = dist.get_rank()
    dev = torch.device("cuda", int(device_of_rank.split(",")[me]))
    torch.cuda.set_device(dev)
    R = dist.ReduceOp
    for dtype in (torch.float32, torch.bfloat16, torch.int32, torch.int64):
        ops(dev, dtype, R)
    streams(dev)
    mixed(dev)
    name = _C._device_comm(ct._ccomm_group(None), dev.index)
    if name != "0:default_pg.cuda%d" % dev.index:
        fail("device communicator named %r" % name)
    dist.destroy_process_group()
    print("rank %d on %s: torch cuda ok" % (me, dev), flush=True)


def main(runs):
    import torch
    if not torch.cuda.is_available():
        why = "torch %s has no CUDA" % torch.__version__ if not torch.version.cuda else \
            "torch.cuda.is_available() is false"
        print("skipped: no CUDA device (%s)" % why)
        return SKIP
    import harness
    ngpu = torch.cuda.device_count()
    table = {
        "nccl1": (1, "0", {}),
        "native2": (2, "0,0", {"CCOMM_NCCL_LIB": "/nonexistent/libnccl.so.2"}),
        "nccl2": (2, "0,1", {}),
    }
    runs = runs or [r for r in table if r != "nccl2" or ngpu >= 2]
    ok = True
    for r in runs:
        nranks, devs, env = table[r]
        ranks = harness.run(os.path.abspath(__file__), nranks, ["--worker", devs], env=env,
                            timeout=240)
        good = harness.report(ranks, r)
        print("%s %s (%d ranks on cuda:%s)" % ("PASS" if good else "FAIL", r, nranks, devs),
              flush=True)
        ok = ok and good
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
    else:
        sys.exit(main(sys.argv[1:]))
