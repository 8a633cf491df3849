"""ddp_train.py - a small model trained with DistributedDataParallel over ccomm.

    torchrun --nproc_per_node=4 examples/torch/ddp_train.py              # trains, prints the loss
    torchrun --nproc_per_node=4 examples/torch/ddp_train.py --hang-rank 2 --hang-step 5
    build/bin/ccdump diagnose ccomm-dumps/<job>

The data is synthetic (a fixed random linear map plus noise, from --seed), so two runs
give the same numbers. With --hang-rank R --hang-step S, rank R stops (sleeps) at step S:
the other ranks' all_reduce times out after --timeout seconds, every rank writes its
flight-recorder dump, and `ccdump diagnose` names rank R. Without torchrun (Debian's is
broken on Python 3.11) set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT yourself, or use
tests/torch/harness.py's launcher. Exit status: 0 trained, 1 a collective failed.
"""
import argparse
import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

import ccomm.torch  # noqa: F401  registers the backend "ccomm"


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="ccomm", help="ccomm (default) or gloo, to compare")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=32, help="samples per rank and step")
    p.add_argument("--width", type=int, default=64, help="hidden width of the model")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--timeout", type=float, default=60.0, help="collective timeout (s)")
    p.add_argument("--hang-rank", type=int, default=-1, help="this rank stops at --hang-step")
    p.add_argument("--hang-step", type=int, default=5)
    p.add_argument("--hang-seconds", type=float, default=600.0, help="how long it stops")
    p.add_argument("--kill-rank", type=int, default=-1,
                   help="this rank SIGKILLs itself mid-step at --hang-step")
    p.add_argument("--save", default="", help="write the final parameters to SAVE.rank<r>.pt")
    return p.parse_args()


def model(width, seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(16, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(),
                         nn.Linear(width, 4))


def batch(step, rank, size, n, seed):
    """This rank's shard of step `step`: the same global batch whatever the backend."""
    g = torch.Generator().manual_seed(seed * 100003 + step)
    w = torch.randn(16, 4, generator=torch.Generator().manual_seed(seed))
    x = torch.randn(size * n, 16, generator=g)
    y = x @ w + 0.01 * torch.randn(size * n, 4, generator=g)
    return x[rank * n:(rank + 1) * n], y[rank * n:(rank + 1) * n]


def main():
    a = parse()
    torch.set_num_threads(1)  # ranks share the machine's cores
    dist.init_process_group(a.backend, timeout=timedelta(seconds=a.timeout))
    rank, size = dist.get_rank(), dist.get_world_size()
    net = nn.parallel.DistributedDataParallel(model(a.width, a.seed))
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    loss_fn = nn.MSELoss()
    loss = torch.zeros(())
    try:
        for step in range(a.steps):
            if step == a.hang_step and rank == a.hang_rank:
                print("rank %d: stopping at step %d for %.0f s" % (rank, step, a.hang_seconds),
                      flush=True)
                time.sleep(a.hang_seconds)
            x, y = batch(step, rank, size, a.batch, a.seed)
            opt.zero_grad()
            loss = loss_fn(net(x), y)
            if step == a.hang_step and rank == a.kill_rank:
                os.kill(os.getpid(), signal.SIGKILL)  # mid-step: after forward, before backward
            loss.backward()  # DDP all-reduces the gradient buckets here
            opt.step()
            # The mean loss over ranks, as every rank sees it.
            mean = loss.detach().clone()
            dist.all_reduce(mean)
            mean /= size
            if rank == 0:
                print("step %2d loss %.8f" % (step, mean.item()), flush=True)
    except RuntimeError as e:
        print("rank %d: step %d failed: %s" % (rank, step, e), file=sys.stderr, flush=True)
        return 1
    if a.save:
        torch.save({k: v.detach().clone() for k, v in net.module.state_dict().items()},
                   "%s.rank%d.pt" % (a.save, rank))
    if rank == 0:
        print("final loss %.8f" % mean.item(), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
