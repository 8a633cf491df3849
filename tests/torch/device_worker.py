"""device_worker.py - one rank of test_device_comm.py: the path a group's first op on a CUDA
tensor takes (a device communicator split off the group's, through the CUDA plugin), reached
through ccomm._C._device_comm on a machine where it must fail: the error must name the
device, the communicator, the plugin, ccomm's status and the cause (cc_last_error: what the
core or the plugin logged); the group must work on after it.

argv: expect ("fail" or "ok"), the plugin text the error must name, the cause it must name."""
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import ccomm.torch as ct
from ccomm import _C


def fail(msg):
    raise AssertionError("rank %d: %s" % (dist.get_rank(), msg))


def check_all_reduce(what):
    t = torch.ones(3)
    dist.all_reduce(t)
    if t.tolist() != [float(dist.get_world_size())] * 3:
        fail("all_reduce %s gave %r" % (what, t.tolist()))


def main():
    expect, plugin, cause = sys.argv[1], sys.argv[2], sys.argv[3]
    dist.init_process_group("ccomm", timeout=timedelta(seconds=20))
    pg = ct._ccomm_group(None)
    check_all_reduce("before")
    for attempt in range(2):  # a failed creation leaves nothing behind: it can be tried again
        try:
            name = _C._device_comm(pg, 0)
        except RuntimeError as e:
            msg = str(e)
            if expect != "fail":
                fail("device communicator failed: %s" % msg)
            for word in ("0:default_pg.cuda0", "device cuda:0", plugin, "CCOMM_CUDA_PLUGIN",
                         "ERR_NOT_SUPPORTED", "(not supported): "):
                if word not in msg:
                    fail("error %r does not name %r" % (msg, word))
            if cause not in msg.split("(not supported): ", 1)[1]:
                fail("error %r does not give the cause %r after the status" % (msg, cause))
            print("rank %d: attempt %d: %s" % (dist.get_rank(), attempt, msg), flush=True)
        else:
            if expect == "fail":
                fail("device communicator %r made where it must fail" % name)
            if name != "0:default_pg.cuda0":
                fail("device communicator named %r" % name)
        check_all_reduce("after the device communicator")
    try:
        _C._device_comm(pg, -1)
    except ValueError as e:
        if "ordinal -1" not in str(e):
            fail("ordinal -1: %s" % e)
    else:
        fail("ordinal -1 accepted")
    check_all_reduce("at the end")
    print("rank %d: device comm ok" % dist.get_rank(), flush=True)


if __name__ == "__main__":
    main()
