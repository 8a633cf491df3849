"""torch_compare.py - torch.distributed over ccomm against gloo, alternating in one run.

    PYTHONPATH=build/python /usr/bin/python3 bench/torch_compare.py --ranks 2 4

Starts the ranks itself (Debian's torchrun is broken on Python 3.11). In every rank the
default group is "ccomm" and a second group over the same ranks is "gloo"; each sample
times a batch of calls on one backend, then the same on the other, so both see the same
machine load. Prints, per collective and size, the median time per call on each backend
and the ratio gloo/ccomm (above 1: ccomm is faster); then the median time per DDP step of
a model of about 10 M parameters on each. Sizes are the tensor's bytes per rank.
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

SIZES = [8, 1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]
OPS = ["all_reduce", "broadcast", "all_gather_into_tensor", "reduce_scatter_tensor",
       "all_to_all_single"]


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    p.add_argument("--samples", type=int, default=7, help="alternating samples per point")
    p.add_argument("--max-size", type=int, default=64 << 20)
    p.add_argument("--ops", nargs="+", default=OPS)
    p.add_argument("--ddp-steps", type=int, default=10, help="0: skip the DDP step")
    p.add_argument("--timeout", type=int, default=1800, help="bound on one job (s)")
    return p.parse_args()


# ---- the ranks --------------------------------------------------------------------------

def calls_for(nbytes):
    """Calls per sample: enough that a sample lasts a few ms, few at 64 MiB."""
    return max(2, min(200, (4 << 20) // max(nbytes, 1)))


def make_op(name, nbytes, group, n, lists=False):
    import torch
    import torch.distributed as dist
    count = max(1, nbytes // 4)
    count -= count % n or 0
    count = max(count, n)
    x = torch.ones(count, dtype=torch.float32)
    if name == "all_reduce":
        return lambda: dist.all_reduce(x, group=group)
    if name == "broadcast":
        return lambda: dist.broadcast(x, 0, group=group)
    if name == "all_gather_into_tensor":
        out = torch.empty(count * n)
        if lists:  # the list form, for a backend without the tensor form
            outs = list(out.chunk(n))
            return lambda: dist.all_gather(outs, x, group=group)
        return lambda: dist.all_gather_into_tensor(out, x, group=group)
    if name == "reduce_scatter_tensor":
        out = torch.empty(count // n)
        return lambda: dist.reduce_scatter_tensor(out, x, group=group)
    if name == "all_to_all_single":
        out = torch.empty(count)
        return lambda: dist.all_to_all_single(out, x, group=group)
    raise ValueError(name)


def sample(fn, calls, dist, group):
    dist.barrier(group=group)
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def bench_ops(a, dist, gloo, n, rank):
    rows = []
    for name in a.ops:
        for nbytes in [s for s in SIZES if s <= a.max_size]:
            fns = {}
            for backend, group in (("ccomm", None), ("gloo", gloo)):
                for lists in (False, True):
                    fn = make_op(name, nbytes, group, n, lists)
                    try:
                        fn()
                        fns[backend] = fn
                        break
                    except RuntimeError as e:  # gloo lacks some ops in torch 1.13
                        fns[backend] = str(e).splitlines()[0][:60]
            calls = calls_for(nbytes)
            times = {"ccomm": [], "gloo": []}
            for _ in range(a.samples):
                for backend, group in (("ccomm", None), ("gloo", gloo)):
                    if callable(fns[backend]):
                        times[backend].append(sample(fns[backend], calls, dist, group))
            med = {b: statistics.median(t) * 1e6 if t else None for b, t in times.items()}
            rows.append((name, nbytes, med["ccomm"], med["gloo"],
                         fns["gloo"] if not callable(fns["gloo"]) else ""))
    return rows


def ddp_steps(a, dist, gloo, rank):
    import torch
    import torch.nn as nn

    def net():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024), nn.ReLU(),
                             nn.Linear(1024, 1024))

    models = {"ccomm": nn.parallel.DistributedDataParallel(net()),
              "gloo": nn.parallel.DistributedDataParallel(net(), process_group=gloo)}
    params = sum(p.numel() for p in models["ccomm"].parameters())
    x = torch.randn(16, 1024)
    times = {"ccomm": [], "gloo": []}
    for step in range(a.ddp_steps + 2):
        for backend, m in models.items():
            dist.barrier()
            t0 = time.perf_counter()
            m(x).square().mean().backward()
            dt = time.perf_counter() - t0
            if step >= 2:  # the first steps build buckets
                times[backend].append(dt)
    return params, {b: statistics.median(t) * 1e3 for b, t in times.items()}


def rank_main(a):
    import torch
    import torch.distributed as dist
    import ccomm.torch  # noqa: F401
    torch.set_num_threads(1)
    dist.init_process_group("ccomm")
    gloo = dist.new_group(backend="gloo")
    n, rank = dist.get_world_size(), dist.get_rank()
    rows = bench_ops(a, dist, gloo, n, rank)
    ddp = ddp_steps(a, dist, gloo, rank) if a.ddp_steps else None
    if rank == 0:
        print("ROWS %r" % (rows,))
        print("DDP %r" % (ddp,))
    dist.barrier()


# ---- the launcher -----------------------------------------------------------------------

def human(nbytes):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return "%d %s" % (nbytes >> shift, unit)
    return "%d B" % nbytes


def launch(a, n):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), TORCH_CPP_LOG_LEVEL="ERROR",
                   TORCH_COMPARE_RANK="1")
        procs.append(subprocess.Popen([sys.executable, __file__] + sys.argv[1:], env=env,
                                      stdout=subprocess.PIPE, text=True))
    out = procs[0].communicate(timeout=a.timeout)[0]
    for p in procs[1:]:
        p.communicate(timeout=60)
    if any(p.returncode for p in procs):
        sys.exit("a rank failed: exits %s" % [p.returncode for p in procs])
    rows = ddp = None
    for line in out.splitlines():
        if line.startswith("ROWS "):
            rows = eval(line[5:])
        elif line.startswith("DDP "):
            ddp = eval(line[4:])
    return rows, ddp


def main():
    a = parse()
    if os.environ.get("TORCH_COMPARE_RANK"):
        return rank_main(a)
    print("| ranks | collective | size | ccomm (us) | gloo (us) | gloo / ccomm |")
    print("|---|---|---|---|---|---|")
    ddps = []
    for n in a.ranks:
        rows, ddp = launch(a, n)
        for name, nbytes, c, g, why in rows:
            ratio = "%.1fx" % (g / c) if c and g else ("n/a (gloo: %s)" % why if why else "n/a")
            print("| %d | %s | %s | %s | %s | %s |" % (
                n, name, human(nbytes), "%.1f" % c if c else "-", "%.1f" % g if g else "-", ratio))
        sys.stdout.flush()
        if ddp:
            ddps.append((n, ddp))
    for n, (params, med) in ddps:
        print("\nDDP step (%d ranks, %.1f M parameters, batch 16/rank, forward+backward): "
              "ccomm %.1f ms, gloo %.1f ms (gloo / ccomm %.2fx)"
              % (n, params / 1e6, med["ccomm"], med["gloo"], med["gloo"] / med["ccomm"]))


if __name__ == "__main__":
    main()
