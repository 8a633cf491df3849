"""fr_rules.py - PyTorch's flight recorder rules, checked on a directory of pickles.

Written for test_ccdump_pickle from a reading of PyTorch's analyzer
(torch/distributed/flight_recorder/components/{builder,types,utils}.py) and of
how ProcessGroupNCCL numbers and records ops; no PyTorch code is used (the
analyzer needs PyTorch 2.5+, not installed here).

usage: python3 fr_rules.py DIR PREFIX NRANKS [--fresh]
Prints one JSON object: {"refused": [...], "numbering": [...], "flags": [...]}
  refused    what would make the analyzer raise or that it cannot read
             (types, names, ranks, groups)
  numbering  entries not numbered as ProcessGroupNCCL numbers them: per
             process group one collective counter, one p2p counter (a batch
             of send/recv and its coalesced end share one number) and one op
             counter; with --fresh the counters start at 0 (no ring wrap)
  flags      what the analyzer would report on the job: per collective
             (group, collective_seq_id) the type, size, dtype and state rules
             of its Op.match, the all_to_all totals, ranks not joining; per
             pair of ranks the sends and receives paired in order, sizes
             equal
"""
import ast
import json
import math
import pickle
import sys

COLLECTIVES = {
    "broadcast", "_broadcast_oop", "reduce", "_reduce_oop", "all_gather",
    "all_gather_single", "all_gather_v", "all_reduce", "_all_gather_base",
    "all_gather_into_tensor_coalesced", "reduce_scatter", "reduce_scatter_single",
    "reduce_scatter_v", "reduce_scatter_tensor_coalesced", "_reduce_scatter_base",
    "gather", "scatter", "all_to_all", "all_to_all_single", "all_to_all_v_single",
    "all_reduce_barrier", "barrier", "split", "new_window", "allreduce_coalesced",
    "ALLGATHER_coalesced", "REDUCE_SCATTER_coalesced"}
P2P = {"send", "recv"}
INTS = ("record_id", "pg_id", "collective_seq_id", "p2p_seq_id", "op_id",
        "time_created_ns", "timeout_ms")

out = {"refused": [], "numbering": [], "flags": [], "batches": {}}


def refuse(rank, what):
    out["refused"].append("rank %d: %s" % (rank, what))


def prod(shape):
    return math.prod(shape)


def load(d, prefix, n):
    dumps = {}
    for r in range(n):
        with open("%s/%s%d" % (d, prefix, r), "rb") as f:
            dumps[r] = pickle.load(f)
    versions = {v["version"] for v in dumps.values()}
    if len(versions) != 1:
        refuse(0, "versions differ: %s" % versions)
    return dumps


def groups(dumps):
    """pg name -> sorted members; the analyzer keys a group by name and member set."""
    members, seen = {}, {}
    for r, d in dumps.items():
        members[r] = {}
        for name, pg in d["pg_config"].items():
            if not isinstance(pg.get("ranks"), str) or not isinstance(pg.get("desc"), str):
                refuse(r, "pg_config %s: ranks or desc not a string" % name)
                continue
            ranks = ast.literal_eval(pg["ranks"])
            if not isinstance(ranks, list) or not all(type(x) is int for x in ranks):
                refuse(r, "pg_config %s: ranks %r" % (name, pg["ranks"]))
                continue
            key = (name, frozenset(ranks))
            if key in seen and seen[key] != pg["desc"]:
                refuse(r, "pg %s: desc %r vs %r" % (name, pg["desc"], seen[key]))
            seen[key] = pg["desc"]
            members[r][name] = sorted(ranks)
    return members


def parse_op(r, e, members):
    """The analyzer's Op: (type, src, dst) with src/dst group ranks, or None (refused)."""
    for k in INTS:
        if type(e.get(k)) is not int:
            return refuse(r, "record %r: %s = %r" % (e.get("record_id"), k, e.get(k)))
    for k in ("input_sizes", "output_sizes"):
        v = e.get(k)
        if not isinstance(v, list) or not all(isinstance(t, list) and all(type(x) is int for x in t) for t in v):
            return refuse(r, "record %d: %s = %r" % (e["record_id"], k, v))
    for k in ("input_dtypes", "output_dtypes"):
        if not isinstance(e.get(k), list) or not all(type(x) is str for x in e[k]):
            return refuse(r, "record %d: %s" % (e["record_id"], k))
    pg = e.get("process_group")
    if type(pg) is not tuple or len(pg) != 2 or pg[0] not in members[r]:
        return refuse(r, "record %d: process_group %r not in pg_config" % (e["record_id"], pg))
    if e.get("state") not in ("scheduled", "started", "completed") or type(e.get("is_p2p")) is not bool:
        return refuse(r, "record %d: state or is_p2p" % e["record_id"])
    parts = e["profiling_name"].split(":")
    if len(parts) != 2 or parts[0] not in ("nccl", "xccl"):
        return refuse(r, "record %d: profiling_name %r" % (e["record_id"], e["profiling_name"]))
    words = parts[1].split(" ")
    t, meta = words[0], words[1] if len(words) == 2 else None
    if t not in COLLECTIVES | P2P | {"coalesced"}:
        return refuse(r, "record %d: op %r unknown to the analyzer" % (e["record_id"], t))
    group = members[r][pg[0]]
    src = dst = -1
    try:
        if t == "send":
            src, dst = map(int, meta.split("->"))
        elif t == "recv":
            dst, src = map(int, meta.split("<-"))
    except (AttributeError, ValueError):
        return refuse(r, "record %d: %r" % (e["record_id"], e["profiling_name"]))
    if t in P2P:
        me = src if t == "send" else dst
        if not (0 <= src < len(group) and 0 <= dst < len(group)) or group[me] != r:
            return refuse(r, "record %d: %r: ranks not this rank's group ranks"
                          % (e["record_id"], e["profiling_name"]))
        if not e["is_p2p"]:
            return refuse(r, "record %d: a p2p op with is_p2p False" % e["record_id"])
    if t in COLLECTIVES and (not e["input_sizes"] or not e["output_sizes"]):
        return refuse(r, "record %d: %s without sizes (the analyzer indexes them)" % (e["record_id"], t))
    return t, src, dst, pg[0]


def numbering(r, ents, fresh):
    """ProcessGroupNCCL's counters, per group, replayed over the entries in order."""
    state = {}
    for i, (e, op) in enumerate(ents):
        t, pg = op[0], op[3]
        c = state.setdefault(pg, {"coll": None, "p2p": 0 if fresh else None, "op": 0 if fresh else None,
                                  "batch": None})
        end = t == "coalesced" and e["is_p2p"]
        nxt = ents[i + 1] if i + 1 < len(ents) else None
        member = t in P2P and nxt is not None and nxt[1][3] == pg and \
            nxt[0]["p2p_seq_id"] == e["p2p_seq_id"] and (nxt[1][0] in P2P or nxt[0]["is_p2p"])

        def want(key, value):
            if value is not None and e[key] != value:
                out["numbering"].append("rank %d record %d (%s): %s %d, PyTorch's would be %d"
                                        % (r, e["record_id"], e["profiling_name"], key, e[key], value))
        if t not in P2P and not end:
            want("collective_seq_id", c["coll"] + 1 if c["coll"] is not None else (1 if fresh else None))
            c["coll"] = e["collective_seq_id"]
            want("p2p_seq_id", c["p2p"])
            want("op_id", c["op"] + 1 if c["op"] is not None else None)
            c["op"] = e["op_id"]
            c["p2p"] = e["p2p_seq_id"] if c["p2p"] is None else c["p2p"]
            c["batch"] = None
            continue
        if c["coll"] is None and fresh:
            c["coll"] = 0
        want("collective_seq_id", c["coll"])
        c["coll"] = e["collective_seq_id"]
        if end:
            out["batches"][str(r)] = out["batches"].get(str(r), 0) + 1
            if c["batch"] is None:
                out["numbering"].append("rank %d record %d: a coalesced end without a batch before it"
                                        % (r, e["record_id"]))
            want("p2p_seq_id", c["batch"])
            want("op_id", c["op"])
            c["batch"] = None
            continue
        if c["batch"] is None:  # a plain op, or a batch's first member: one new p2p number
            want("p2p_seq_id", c["p2p"] + 1 if c["p2p"] is not None else None)
            c["p2p"] = e["p2p_seq_id"]
        else:
            want("p2p_seq_id", c["batch"])
        want("op_id", c["op"] + 1 if c["op"] is not None else None)
        c["op"] = e["op_id"]
        c["batch"] = e["p2p_seq_id"] if member else None


def dtype_mismatch(t, a, b):
    """Op.dtype_mismatch, read from the analyzer."""
    if t not in ("scatter", "gather", "broadcast") and set(a["input_dtypes"]) != set(a["output_dtypes"]) \
            and a["input_sizes"][0] and a["output_sizes"][0]:
        return True
    if t not in ("scatter", "broadcast") and set(a["input_dtypes"]) != set(b["input_dtypes"]) \
            and a["input_sizes"][0] and b["input_sizes"][0]:
        return True
    return t != "gather" and set(a["output_dtypes"]) != set(b["output_dtypes"]) \
        and a["output_sizes"][0] and b["output_sizes"][0]


def match(t, a, b, n):
    """Op.match for two entries of one collective; None when they match."""
    if t in ("coalesced", "ALLGATHER_coalesced", "REDUCE_SCATTER_coalesced"):
        return None
    if t not in ("all_to_all", "scatter") and a["input_sizes"] != b["input_sizes"]:
        return "input sizes %r vs %r" % (a["input_sizes"], b["input_sizes"])
    if t not in ("all_to_all", "gather") and a["output_sizes"] != b["output_sizes"]:
        return "output sizes %r vs %r" % (a["output_sizes"], b["output_sizes"])
    if t in ("all_reduce", "allreduce_coalesced") and a["input_sizes"] != b["output_sizes"]:
        return "all_reduce input %r vs output %r" % (a["input_sizes"], b["output_sizes"])
    if t in ("all_gather", "all_gather_base", "all_gather_into_tensor_coalesced") and \
            prod(b["output_sizes"][0]) != prod(a["input_sizes"][0]) * n:
        return "all_gather output %r is not %d x input %r" % (b["output_sizes"], n, a["input_sizes"])
    if t in ("reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor_coalesced") and \
            prod(b["input_sizes"][0]) != prod(a["output_sizes"][0]) * n:
        return "reduce_scatter input %r is not %d x output %r" % (b["input_sizes"], n, a["output_sizes"])
    if dtype_mismatch(t, a, b):
        return "dtypes %r/%r vs %r/%r" % (a["input_dtypes"], a["output_dtypes"], b["input_dtypes"],
                                          b["output_dtypes"])
    if a["state"] != b["state"]:
        return "state %s vs %s" % (a["state"], b["state"])
    return None


def collectives(parsed, members):
    by = {}
    for r, ents in parsed.items():
        for e, op in ents:
            if op[0] in P2P or (op[0] == "coalesced" and e["is_p2p"]):
                continue
            by.setdefault((op[3], e["collective_seq_id"]), {}).setdefault(r, (e, op))
    for (pg, seq), per in sorted(by.items()):
        group = next(members[r][pg] for r in per)
        first = min(per)
        e0, (t, _, _, _) = per[first]
        missing = [r for r in group if r not in per and r in parsed]
        if missing:
            out["flags"].append("group %s seq %d %s: not all ranks joining: missing %s" % (pg, seq, t, missing))
        for r in sorted(per):
            e, op = per[r]
            why = "type %s vs %s" % (t, op[0]) if op[0] != t else match(t, e0, e, len(group))
            if why:
                out["flags"].append("group %s seq %d %s: rank %d vs rank %d: %s" % (pg, seq, t, first, r, why))
        if t == "all_to_all" and not missing:
            i = sum(prod(per[r][0]["input_sizes"][0]) for r in per)
            o = sum(prod(per[r][0]["output_sizes"][0]) for r in per)
            if i != o:
                out["flags"].append("group %s seq %d all_to_all: total input %d != output %d" % (pg, seq, i, o))


def p2p(parsed, members):
    """Sends from a to b pair in order with b's receives from a (the analyzer's rule 3)."""
    chans = {}
    for r, ents in parsed.items():
        for e, (t, src, dst, pg) in ents:
            if t in P2P:
                g = members[r][pg]
                key = (pg, g[src], g[dst])
                chans.setdefault(key, {"send": [], "recv": []})[t].append((r, e))
    for (pg, a, b), c in sorted(chans.items()):
        if len(c["send"]) != len(c["recv"]):
            out["flags"].append("group %s: %d sends %d->%d, %d receives" % (pg, len(c["send"]), a, b, len(c["recv"])))
        for (_, s), (_, v) in zip(c["send"], c["recv"]):
            if s["input_sizes"] != v["output_sizes"]:
                out["flags"].append("group %s %d->%d: send %r, receive %r" % (pg, a, b, s["input_sizes"], v["output_sizes"]))


def main():
    d, prefix, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    fresh = "--fresh" in sys.argv
    dumps = load(d, prefix, n)
    members = groups(dumps)
    parsed = {}
    for r, dump in dumps.items():
        if not isinstance(dump.get("entries"), list):
            refuse(r, "no entries list")
            continue
        ents = []
        for e in dump["entries"]:
            op = parse_op(r, e, members) if isinstance(e, dict) else refuse(r, "entry %r" % (e,))
            if op:
                ents.append((e, op))
        ids = [e["record_id"] for e, _ in ents]
        if ids != sorted(set(ids)):
            refuse(r, "record ids not increasing")
        numbering(r, ents, fresh)
        parsed[r] = ents
    collectives(parsed, members)
    p2p(parsed, members)
    print(json.dumps(out, indent=1))


main()
