"""coll_worker.py - one rank of the collective matrix (run by test_collectives.py).

The default group is "ccomm"; a gloo group over the same ranks runs the same calls where
gloo supports them. Inputs are small integers (exact in every float type, products and
sums included), generated from a seed known to every rank, so each rank also computes the
exact expected result locally: results must be bitwise equal to that reference, and to
gloo's. Cases are sampled (seeded) so that every dtype and op is covered without running
the whole cross product at every size.
"""
import functools
import os
import random
import sys

import torch
import torch.distributed as dist

import ccomm.torch  # noqa: F401  registers the backend

R = dist.ReduceOp
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int32, torch.int64]
DTYPES = FLOATS + INTS + [torch.bool]
GLOO_DTYPES = [torch.float32, torch.float64, torch.float16, torch.int8, torch.uint8, torch.int32,
               torch.int64]
OPS = ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG", "PREMUL_SUM"]
GLOO_OPS = ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
checks = 0


def fail(msg):
    raise AssertionError("rank %d: %s" % (dist.get_rank(), msg))


def same(got, want, what):
    global checks
    checks += 1
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        fail("%s: got %s, want %s" % (what, got.flatten()[:8].tolist(), want.flatten()[:8].tolist()))


def valid_ops(dtype):
    if dtype == torch.bool:
        return ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
    if dtype.is_floating_point:
        return ["SUM", "PRODUCT", "MIN", "MAX", "AVG", "PREMUL_SUM"]
    return OPS


def data(seed, rank, shape, dtype, op="SUM"):
    """Rank `rank`'s input of case `seed`: small values, exact under every op."""
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    lo, hi = (-3, 4) if dtype not in (torch.uint8,) else (0, 4)
    if op in ("BAND", "BOR", "BXOR"):
        lo, hi = 0, 100
    if op == "PRODUCT":
        lo, hi = (1, 4) if dtype == torch.uint8 else (-2, 3)
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


def redop(name):
    if name == "PREMUL_SUM":
        return dist._make_nccl_premul_sum(0.5)
    return getattr(R, name)


def reference(xs, op, dtype):
    """The exact reduction of the ranks' inputs xs."""
    wide = torch.float64 if dtype.is_floating_point else torch.int64
    v = [x.to(wide) for x in xs]
    n = len(v)
    if dtype == torch.bool:
        b = [x.bool() for x in xs]
        f = {"SUM": torch.logical_or, "MAX": torch.logical_or, "BOR": torch.logical_or,
             "PRODUCT": torch.logical_and, "MIN": torch.logical_and, "BAND": torch.logical_and,
             "BXOR": torch.logical_xor}[op]
        return functools.reduce(f, b)
    if op == "SUM":
        r = sum(v)
    elif op == "PRODUCT":
        r = functools.reduce(torch.mul, v)
    elif op == "MIN":
        r = functools.reduce(torch.minimum, v)
    elif op == "MAX":
        r = functools.reduce(torch.maximum, v)
    elif op in ("BAND", "BOR", "BXOR"):
        r = functools.reduce({"BAND": torch.bitwise_and, "BOR": torch.bitwise_or,
                              "BXOR": torch.bitwise_xor}[op], v)
    elif op == "AVG":
        r = sum(v) / n if dtype.is_floating_point else torch.div(sum(v), n, rounding_mode="trunc")
    elif op == "PREMUL_SUM":
        r = sum(x * 0.5 for x in v)
    return r.to(dtype)


def noncontig(t):
    """The same values in a tensor whose storage is not packed (every other column)."""
    base = torch.zeros(t.numel(), 2, dtype=t.dtype)
    base[:, 0] = t.flatten()
    return base[:, 0].view(t.shape) if t.dim() == 1 else base[:, 0].reshape(t.shape)


def maybe_async(fn, asyn):
    w = fn(True) if asyn else fn(False)
    if asyn:
        fut = w.get_future()
        w.wait()
        if not w.is_completed() or not w.is_success():
            fail("async work not completed/successful after wait")
        fut.wait()


def case_allreduce(seed, g, gloo, rng):
    n, me = g.size(), g.rank()
    dtype = rng.choice(DTYPES)
    op = rng.choice(valid_ops(dtype))
    shape = (rng.choice([1, 7, 1000, 70000]),)
    x = data(seed, me, shape, dtype, op)
    want = reference([data(seed, r, shape, dtype, op) for r in range(n)], op, dtype)
    t = noncontig(x) if rng.random() < 0.3 else x.clone()
    asyn = rng.random() < 0.5
    maybe_async(lambda a: dist.all_reduce(t, redop(op), group=g, async_op=a), asyn)
    same(t, want, "all_reduce %s %s %s async=%s" % (dtype, op, shape, asyn))
    if dtype in GLOO_DTYPES and op in GLOO_OPS and not (dtype.is_floating_point and op[0] == "B"):
        u = x.clone()
        dist.all_reduce(u, redop(op), group=gloo)
        same(t, u, "all_reduce vs gloo %s %s" % (dtype, op))


def case_reduce(seed, g, gloo, rng):
    n, me = g.size(), g.rank()
    dtype = rng.choice(DTYPES)
    op = rng.choice(valid_ops(dtype))
    root = rng.randrange(n)
    shape = (rng.choice([3, 500]), 2)
    t = data(seed, me, shape, dtype, op)
    dist.reduce(t, root, redop(op), group=g)
    if me == root:
        same(t, reference([data(seed, r, shape, dtype, op) for r in range(n)], op, dtype),
             "reduce %s %s root %d" % (dtype, op, root))


def case_broadcast(seed, g, gloo, rng):
    n, me = g.size(), g.rank()
    dtype = rng.choice(DTYPES + [torch.int16, torch.complex64])
    root = rng.randrange(n)
    shape = (rng.choice([1, 33, 5000]),)
    src = data(seed, root, shape, torch.float32).to(dtype)
    t = data(seed, me, shape, torch.float32).to(dtype)
    t = noncontig(t) if rng.random() < 0.3 else t
    maybe_async(lambda a: dist.broadcast(t, root, group=g, async_op=a), rng.random() < 0.5)
    same(t, src, "broadcast %s root %d" % (dtype, root))


def case_allgather(seed, g, gloo, rng):
    n, me = g.size(), g.rank()
    dtype = rng.choice(DTYPES + [torch.int16])
    shape = (rng.choice([1, 10, 3000]),)
    mine = data(seed, me, shape, dtype)
    want = [data(seed, r, shape, dtype) for r in range(n)]
    outs = [torch.empty(shape, dtype=dtype) for _ in range(n)]
    dist.all_gather(outs, mine, group=g)
    for r in range(n):
        same(outs[r], want[r], "all_gather %s block %d" % (dtype, r))
    flat = torch.empty((n * shape[0],), dtype=dtype)
    maybe_async(lambda a: dist.all_gather_into_tensor(flat, mine, group=g, async_op=a),
                rng.random() < 0.5)
    same(flat, torch.cat(want), "all_gather_into_tensor %s" % dtype)
    if dtype in GLOO_DTYPES:
        gl = [torch.empty(shape, dtype=dtype) for _ in range(n)]
        dist.all_gather(gl, mine, group=gloo)
        same(torch.cat(gl), flat, "all_gather vs gloo %s" % dtype)
    # in place: the input is this rank's block of the output (NCCL's rule)
    buf = torch.cat(want).clone()
    buf[me * shape[0]:(me + 1) * shape[0]] = mine
    dist.all_gather_into_tensor(buf, buf[me * shape[0]:(me + 1) * shape[0]], group=g)
    same(buf, torch.cat(want), "all_gather_into_tensor in place %s" % dtype)


def case_gather_scatter(seed, g, gloo, rng):
    n, me = g.size(), g.rank()
    dtype = rng.choice(DTYPES)
    root = rng.randrange(n)
    shape = (rng.choice([1, 17, 2000]),)
    mine = data(seed, me, shape, dtype)
    outs = [torch.empty(shape, dtype=dtype) for _ in range(n)] if me == root else None
    dist.gather(mine, outs, dst=root, group=g)
    if me == root:
        for r in range(n):
            same(outs[r], data(seed, r, shape, dtype), "gather %s from %d" % (dtype, r))
    parts = [data(seed + 1, r, shape, dtype) for r in range(n)] if me == root else None
    t = torch.empty(shape, dtype=dtype)
    dist.scatter(t, parts, src=root, group=g)
    same(t, data(seed + 1, me, shape, dtype), "scatter %s root %d" % (dtype, root))


def case_reduce_scatter(seed, g, gloo, rng):
    n, me = g.size(), g.rank()
    dtype = rng.choice([d for d in DTYPES if d != torch.bool])
    op = rng.choice(valid_ops(dtype))
    k = rng.choice([1, 5, 4000])
    ins = {r: data(seed, r, (n * k,), dtype, op) for r in range(n)}
    want = reference([ins[r] for r in range(n)], op, dtype)[me * k:(me + 1) * k]
    out = torch.empty((k,), dtype=dtype)
    maybe_async(lambda a: dist.reduce_scatter_tensor(out, ins[me], redop(op), group=g, async_op=a),
                rng.random() < 0.5)
    same(out, want, "reduce_scatter_tensor %s %s" % (dtype, op))
    out2 = noncontig(torch.empty((k,), dtype=dtype))
    dist.reduce_scatter(out2, list(ins[me].chunk(n)), redop(op), group=g)
    same(out2, want, "reduce_scatter %s %s" % (dtype, op))


def case_alltoall(seed, g, gloo, rng):
    n, me = g.size(), g.rank()
    dtype = rng.choice(DTYPES + [torch.int16])
    rows = {(s, d): (seed + s * 7 + d * 3) % 4 for s in range(n) for d in range(n)}  # uneven
    if rng.random() < 0.4:
        rows = {k: 2 for k in rows}
    equal = len(set(rows.values())) == 1
    cols = 3

    def block(s, d):
        return data(seed * 31 + s * n + d, 0, (rows[(s, d)], cols), dtype)

    inp = torch.cat([block(me, d) for d in range(n)])
    want = torch.cat([block(s, me) for s in range(n)])
    out = torch.empty_like(want)
    if equal and rng.random() < 0.5:
        dist.all_to_all_single(out, inp, group=g)
    else:
        dist.all_to_all_single(out, inp, [rows[(s, me)] for s in range(n)],
                               [rows[(me, d)] for d in range(n)], group=g)
    same(out, want, "all_to_all_single %s rows %s" % (dtype, rows))
    outs = [torch.empty((rows[(s, me)], cols), dtype=dtype) for s in range(n)]
    dist.all_to_all(outs, [block(me, d) for d in range(n)], group=g)
    for s in range(n):
        same(outs[s], block(s, me), "all_to_all %s from %d" % (dtype, s))


def glob(g, r):
    """The global rank of rank r of group g (torch's p2p calls take global ranks)."""
    f = getattr(dist, "get_global_rank", None) or dist.distributed_c10d._get_global_rank
    return r if g is dist.distributed_c10d._get_default_group() else f(g, r)


def case_p2p(seed, g, gloo, rng):
    n, me = g.size(), g.rank()
    if n == 1:
        return
    dtype = rng.choice(DTYPES)
    shape = (rng.choice([1, 100, 50000]),)
    to, frm = (me + 1) % n, (me - 1) % n
    got = torch.empty(shape, dtype=dtype)
    if me % 2 == 0:
        dist.send(data(seed, me, shape, dtype), glob(g, to), group=g)
        dist.recv(got, glob(g, frm), group=g)
    else:
        dist.recv(got, glob(g, frm), group=g)
        dist.send(data(seed, me, shape, dtype), glob(g, to), group=g)
    same(got, data(seed, frm, shape, dtype), "send/recv ring %s" % dtype)
    # batch_isend_irecv: every pair exchanges, listed in a random order on each rank
    ops, want = [], {}
    for p in range(n):
        if p == me:
            continue
        want[p] = torch.empty(shape, dtype=dtype)
        ops.append(dist.P2POp(dist.isend, data(seed + p, me, shape, dtype), glob(g, p), group=g))
        ops.append(dist.P2POp(dist.irecv, want[p], glob(g, p), group=g))
    random.Random(seed * 10 + me).shuffle(ops)
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    for p, t in want.items():
        same(t, data(seed + me, p, shape, dtype), "batch_isend_irecv %s from %d" % (dtype, p))


def case_coalesced(seed, g, gloo, rng):
    n, me = g.size(), g.rank()
    dtype = rng.choice([torch.float32, torch.int64, torch.float16])
    shapes = [(rng.choice([1, 9, 3000]),) for _ in range(rng.randint(1, 4))]
    xs = [data(seed + i, me, s, dtype) for i, s in enumerate(shapes)]
    dist.all_reduce_coalesced(xs, group=g)
    for i, s in enumerate(shapes):
        same(xs[i], reference([data(seed + i, r, s, dtype) for r in range(n)], "SUM", dtype),
             "all_reduce_coalesced %s #%d" % (dtype, i))
    # all_gather_coalesced (torch checks that the inputs share a dtype)
    ins = [data(seed + i, me, s, dtype) for i, s in enumerate(shapes)]
    outs = [[torch.empty_like(x) for _ in range(n)] for x in ins]
    dist.all_gather_coalesced(outs, ins, group=g)
    for i, s in enumerate(shapes):
        for r in range(n):
            same(outs[i][r], data(seed + i, r, s, ins[i].dtype),
                 "all_gather_coalesced #%d from %d" % (i, r))


def case_objects(seed, g, gloo, rng):
    n, me = g.size(), g.rank()
    objs = [{"rank": me, "seed": seed, "payload": "x" * (me * 100)}]
    out = [None] * n
    dist.all_gather_object(out, objs[0], group=g)
    if [o["rank"] for o in out] != list(range(n)) or out[n - 1]["payload"] != "x" * ((n - 1) * 100):
        fail("all_gather_object: %r" % [o["rank"] for o in out])
    lst = [seed, "root-%d" % (seed % n)] if me == seed % n else [None, None]
    dist.broadcast_object_list(lst, src=seed % n, group=g)
    if lst != [seed, "root-%d" % (seed % n)]:
        fail("broadcast_object_list: %r" % lst)
    gl = [None] * n if me == 0 else None
    dist.gather_object(("g", me), gl, dst=0, group=g)
    if me == 0 and gl != [("g", r) for r in range(n)]:
        fail("gather_object: %r" % gl)
    outl = [None]
    dist.scatter_object_list(outl, [("s", r) for r in range(n)] if me == 0 else None, src=0, group=g)
    if outl[0] != ("s", me):
        fail("scatter_object_list: %r" % outl)


def int16_inputs(n, op, shape=(64,)):
    """Every rank's int16 input for op: edge values where the op wraps (SUM, PRODUCT), the
    extremes for MIN/MAX, all 16 bits for the bitwise ops; AVG and PREMUL_SUM (factor 2)
    stay in range, as their integer rules (truncate, saturate) are the kernel tests' part."""
    g = torch.Generator().manual_seed(1600 + OPS.index(op))
    lo, hi = {"PRODUCT": (-300, 301), "AVG": (-8000, 8001), "PREMUL_SUM": (-4000, 4001)}.get(
        op, (-32768, 32768))
    xs = [torch.randint(lo, hi, shape, generator=g, dtype=torch.int64) for _ in range(n)]
    if op in ("SUM", "MIN", "MAX"):
        for r in range(n):
            xs[r][:4] = torch.tensor([32767, -32768, 32767 - r, -32768 + r])
    return [x.to(torch.int16) for x in xs]


def int16_reference(xs, op, n):
    """The exact result, computed in int64 and wrapped to int16 as the kernels wrap."""
    v = [x.to(torch.int64) for x in xs]
    if op == "PREMUL_SUM":
        return (sum(v) * 2).to(torch.int16)
    if op == "AVG":
        return torch.div(sum(v), n, rounding_mode="trunc").to(torch.int16)
    return reference(xs, op, torch.int16)


def case_int16_all_ops(g):
    """int16 under every ReduceOp: all_reduce (sync, async, strided), reduce and
    reduce_scatter_tensor. Gloo has no int16 ("Invalid scalar type"): exact reference only."""
    n, me = g.size(), g.rank()
    for op in OPS:
        rop = dist._make_nccl_premul_sum(2.0) if op == "PREMUL_SUM" else getattr(R, op)
        xs = int16_inputs(n, op)
        want = int16_reference(xs, op, n)
        for variant in ("sync", "async", "strided"):
            t = noncontig(xs[me]) if variant == "strided" else xs[me].clone()
            maybe_async(lambda a: dist.all_reduce(t, rop, group=g, async_op=a), variant == "async")
            same(t, want, "all_reduce int16 %s %s" % (op, variant))
        root = OPS.index(op) % n
        t = xs[me].clone()
        dist.reduce(t, root, rop, group=g)
        if me == root:
            same(t, want, "reduce int16 %s root %d" % (op, root))
        k = xs[me].numel() // n
        out = torch.empty((k,), dtype=torch.int16)
        dist.reduce_scatter_tensor(out, xs[me], rop, group=g)
        same(out, want[me * k:(me + 1) * k], "reduce_scatter_tensor int16 %s" % op)


CASES = [case_allreduce, case_reduce, case_broadcast, case_allgather, case_gather_scatter,
         case_reduce_scatter, case_alltoall, case_p2p, case_coalesced, case_objects]


def subgroups(world_gloo, rounds):
    n, me = dist.get_world_size(), dist.get_rank()
    half = list(range(0, n, 2))  # even ranks
    sub = dist.new_group(half)
    sub_gloo = dist.new_group(half, backend="gloo")
    if me not in half:
        # a group this rank is not in: torch itself returns without calling the backend
        t = torch.ones(3)
        if dist.all_reduce(t, group=sub) is not None or t.tolist() != [1.0, 1.0, 1.0]:
            fail("all_reduce on a group without this rank touched %r" % t)
    if me in half:
        name = ccomm.torch.comm_name(sub)
        if not name.endswith(":undefined") or name.startswith("0:"):
            fail("subgroup comm name %r" % name)
        for i in range(rounds):
            rng = random.Random(9000 + i)
            for case in (case_allreduce, case_allgather, case_p2p):
                case(9000 + i, sub, sub_gloo, rng)
    # consecutive pairs, as new_subgroups(2) makes them (torch 1.13's new_subgroups insists
    # on CUDA): every rank creates every pair, in the same order
    if n % 2 == 0:
        pairs = [dist.new_group([r, r + 1]) for r in range(0, n, 2)]
        mine = pairs[me // 2]
        t = torch.tensor([float(me)])
        dist.all_reduce(t, group=mine)
        if t.item() != float(me - me % 2) * 2 + 1:
            fail("new_subgroups all_reduce gave %s" % t.item())


def bad_input():
    g = dist.distributed_c10d._get_default_group()
    n = dist.get_world_size()
    expect = [
        (lambda: dist.all_reduce(torch.ones(2), op=R.BAND), "BAND"),
        (lambda: dist.all_reduce(torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8)),
         "QInt8"),
        (lambda: dist.all_gather([torch.ones(2)] * (n + 1), torch.ones(2)), "tensor_list holds"),
        (lambda: dist.all_gather([torch.ones(3)] * n, torch.ones(2)), "elements"),
        (lambda: dist.broadcast(torch.ones(2).to_sparse(), 0), "layout"),
        (lambda: g.recv_anysource([torch.ones(1)], 0), "any source"),
        (lambda: dist.send(torch.ones(1), n + 3), "out of range"),
    ]
    for fn, word in expect:
        try:
            fn()
        except (ValueError, RuntimeError) as e:
            if word not in str(e):
                fail("bad input: error %r does not name %r" % (str(e), word))
            continue
        fail("bad input naming %r was accepted" % word)
    # nothing was enqueued: the group still works
    t = torch.ones(1)
    dist.all_reduce(t)
    if t.item() != n:
        fail("all_reduce after bad input gave %s" % t.item())


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    dist.init_process_group("ccomm")
    me, n = dist.get_rank(), dist.get_world_size()
    world = dist.distributed_c10d._get_default_group()
    if ccomm.torch.comm_name() != "0:default_pg":
        fail("default group comm name %r" % ccomm.torch.comm_name())
    gloo = dist.new_group(backend="gloo")
    for i in range(rounds):
        for j, case in enumerate(CASES):
            seed = 100 * i + j + 1
            case(seed, world, gloo, random.Random(seed))
    case_int16_all_ops(world)
    world.barrier().wait()
    world.monitored_barrier(timeout=__import__("datetime").timedelta(seconds=20))
    subgroups(gloo, max(1, rounds // 2))
    bad_input()
    print("rank %d: %d checks passed" % (me, checks), flush=True)


if __name__ == "__main__":
    main()
