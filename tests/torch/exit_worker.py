"""exit_worker.py - one rank of test_exit.py: register a Python post hook, leave async
all_reduces in flight and exit at once, so the group's completion thread runs the hook while
Python finalizes. argv: how many ops."""
import sys
import time

import torch
import torch.distributed as dist

import ccomm.torch as ct


def main():
    n = int(sys.argv[1])
    dist.init_process_group("ccomm")
    seen = []

    def hook(rec):
        seen.append(rec["name"])
        time.sleep(0.0005)  # hold the GIL a little: finalization races the hook

    ct.register_post_hook(None, hook)
    t = torch.ones(256)
    works = [dist.all_reduce(t, async_op=True) for _ in range(n)]
    print("rank %d: %d ops in flight at exit" % (dist.get_rank(), len(works)), flush=True)
    # No wait and no destroy_process_group: the interpreter exits with the works pending.


if __name__ == "__main__":
    main()
