"""ccomm.torch - the torch.distributed backend "ccomm".

    import torch.distributed as dist
    import ccomm.torch                  # registers the backend
    dist.init_process_group("ccomm")    # the launcher's RANK, WORLD_SIZE, MASTER_ADDR/PORT

Every collective of the group runs through ccomm's op door, so the flight
recorder, the hang watchdog and ``ccdump`` see it. The bootstrap needs nothing
beyond what torch already has: rank 0 hosts ccomm's own store on a free port
and publishes its address and a fresh job key through the torch store that
init_process_group made. See docs/pytorch.md.
"""
import atexit
import os
import secrets
import socket
from datetime import timedelta

import torch  # noqa: F401  (the extension needs torch's libraries loaded first)
import torch.distributed as dist

from . import _C

__all__ = ["dump", "ring_path", "register_pre_hook", "register_post_hook", "comm_name"]

BACKEND = "ccomm"
_world = None  # the ccomm group of the default process group, parent of the subgroups


def _peer_host():
    """An address of this host that the other ranks can reach."""
    addr = os.environ.get("MASTER_ADDR")
    if addr:
        return addr
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _rendezvous(store, rank):
    """Rank 0 publishes its ccomm store's address and the job key through torch's store."""
    key = os.environ.get("CCOMM_JOB_KEY", "")
    if rank == 0:
        addr = "%s:%d" % (_peer_host(), _free_port())
        key = key or secrets.token_hex(32)
        store.set("ccomm/key", key)
        store.set("ccomm/addr", addr)  # last: the others wait for it
    else:
        addr = store.get("ccomm/addr").decode()
        key = store.get("ccomm/key").decode()
    # ccomm reads its environment once, at the first communicator; a later group of the
    # same process keeps that key, which rank 0 then publishes again.
    os.environ["CCOMM_JOB_KEY"] = key
    return addr


def _millis(timeout):
    if isinstance(timeout, timedelta):
        return max(1, int(timeout.total_seconds() * 1000))
    return max(1, int(float(timeout) * 1000))  # torch 2.x passes a float of seconds


def _create(opts, pg_options=None):
    """The creator torch.distributed calls for every group of backend "ccomm"."""
    global _world
    store, rank, size = opts.store, opts.group_rank, opts.group_size
    group_name = str(opts.group_id)
    ranks = list(opts.global_ranks_in_group)
    desc = getattr(opts, "group_desc", "") or ("default_pg" if not ranks else "undefined")
    name = "%s:%s" % (group_name, desc)
    timeout_ms = _millis(opts.timeout)
    if ranks and _world is not None and len(ranks) < _world_size():
        # A subgroup of the default group: a ccomm sub-communicator, no new rendezvous.
        pg = _C.new_subgroup(_world, [int(r) for r in ranks], timeout_ms, name)
    else:
        pg = _C.new_world(rank, size, _rendezvous(store, rank), timeout_ms, name)
        if not ranks:
            _world = pg
    return pg


def _world_size():
    return _world.size() if hasattr(_world, "size") else dist.get_world_size()


def _register():
    if hasattr(dist.Backend, BACKEND.upper()):
        return
    try:
        # torch 2.x routes a tensor to the backend registered for its device: one backend
        # object serves both (CUDA tensors go to its device communicators, docs/pytorch.md).
        # Where ccomm._C was built without CUDA, CUDA tensors would only be refused.
        devices = ["cpu", "cuda"] if _C.has_cuda() else ["cpu"]
        dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=devices)
    except TypeError:  # torch 1.13: no devices argument
        dist.Backend.register_backend(BACKEND, _create, extended_api=True)


def _ccomm_group(group):
    """The ccomm process group behind a torch group (None: the default group)."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if hasattr(pg, "_get_backend"):  # torch 2.x wraps the backend in a ProcessGroup
        pg = pg._get_backend(torch.device("cpu"))
    if not _C.is_ccomm(pg):
        raise ValueError("group %r is not a ccomm process group (backend %s)"
                         % (group, pg.name() if hasattr(pg, "name") else "?"))
    return pg


def dump(path=None):
    """Write this process's flight recorder as JSON (PyTorch's format plus ccomm's keys).

    path: a file, or None for $CCOMM_DUMP_DIR/<job id>/rank<r>.json (never overwritten).
    """
    _C.dump(None if path is None else os.fspath(path))


def ring_path():
    """The path of this process's flight-recorder ring file (ccdump reads it even after a
    SIGKILL), or None when the recorder is off or no group exists yet."""
    return _C.ring_path()


def register_pre_hook(group, fn):
    """Call fn(record) on the issuing thread before each op of group enters ccomm's engine.

    record is a dict: name, seq, p2p_seq, group, rank, size, root, peer, in_count,
    out_count, bytes, dtype, op, status ("INPROGRESS"), duration_us (None), ...
    Opt-in: each op then takes the GIL once more (a few microseconds)."""
    if not callable(fn):
        raise TypeError("fn must be callable, got %r" % (fn,))
    _C.add_pre_hook(_ccomm_group(group), fn)


def register_post_hook(group, fn):
    """Call fn(record) once each op of group has ended, with its status and duration_us.

    Runs on the group's completion thread, before the op's Work completes."""
    if not callable(fn):
        raise TypeError("fn must be callable, got %r" % (fn,))
    _C.add_post_hook(_ccomm_group(group), fn)


def comm_name(group=None):
    """The ccomm communicator's name of a group: "<PyTorch group name>:<description>"."""
    return _C.comm_name(_ccomm_group(group))


_register()
# Before Python finalizes, ccomm's threads stop calling into it (Python hooks are skipped from
# then on): a thread that takes the GIL during finalization is ended or crashes.
atexit.register(_C._python_exiting)
