#!/bin/sh
# bench/compare_plot.sh RESULTS.tsv FILE.svg [TITLE] - bench/compare.sh's plot:
# bus bandwidth against size, log-log, one panel per collective and transport,
# one curve per library (ccomm, Open MPI) and rank count, from the medians of
# the raw rows compare.sh collected ("lib transport ranks coll size time_us
# busbw"). busbw is recomputed from the median time with nccl-tests' bus
# factors (Open MPI's mpi_bench prints it with two decimals: 0.00 below about
# 10 KB), so both libraries' curves come from the same formula.
# Needs gnuplot (apt-get install gnuplot-nox).
set -eu
case "${1:-}" in -h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
[ $# -ge 2 ] || { echo "usage: compare_plot.sh RESULTS.tsv FILE.svg [TITLE]" >&2; exit 2; }
RES=$1 SVG=$2 TITLE=${3:-compare.sh}
[ -r "$RES" ] || { echo "compare_plot.sh: cannot read results \"$RES\"" >&2; exit 2; }
command -v gnuplot >/dev/null 2>&1 ||
    { echo "compare_plot.sh: needs gnuplot: install it (apt-get install gnuplot-nox)" >&2; exit 2; }
DAT=$(mktemp -d /tmp/ccomm-plot.XXXXXX)
trap 'rm -rf "$DAT"' EXIT

# Data files (one per panel, library and rank count) and the gnuplot script.
python3 - "$RES" "$DAT" "$SVG" "$TITLE" >"$DAT/plot.gp" <<'EOF'
import collections, statistics, sys
res, dat, svg, title = sys.argv[1:5]
ORDER = ["allreduce", "broadcast", "allgather", "reduce_scatter", "alltoall"]
def factor(coll, n):
    return {"allreduce": 2 * (n - 1) / n, "broadcast": 1.0}.get(coll, (n - 1) / n)
rows = collections.defaultdict(list)
for line in open(res):
    f = line.split()
    if len(f) not in (7, 8):  # 8: the run's placement (compare.sh since 2026-12-06)
        continue
    lib, tp, n, coll, size, t = f[0], f[1], int(f[2]), f[3], int(f[4]), float(f[5])
    if t > 0 and size > 0:
        rows[(coll, tp, lib, n, size)].append(t)
if not rows:
    sys.exit("compare_plot.sh: no result rows in " + res)
panels = sorted({(k[0], k[1]) for k in rows},
                key=lambda p: (ORDER.index(p[0]) if p[0] in ORDER else 99, p[0], p[1] != "shm"))
colls = sorted({p[0] for p in panels}, key=lambda c: ORDER.index(c) if c in ORDER else 99)
tps = sorted({p[1] for p in panels}, key=lambda t: t != "shm")
curves = collections.defaultdict(list)  # (coll, tp, lib, n) -> [(size, busbw)]
for (coll, tp, lib, n, size), ts in rows.items():
    t = statistics.median(ts)
    curves[(coll, tp, lib, n)].append((size, size / (t * 1e-6) / 1e9 * factor(coll, n)))
W, H = 460 * len(tps), 300 * len(colls) + 40
print(f'set terminal svg size {W},{H} dynamic font "sans,10" background "white"')
print(f'set output "{svg}"')
print(f'set multiplot layout {len(colls)},{len(tps)} title "busbw against size: {title}"')
# Sizes by powers of 2 (16, 1Ki, 1Mi), bandwidth by decades; names are plain text
# ("reduce_scatter" is no subscript).
print('set termoption noenhanced')
print('set logscale x 2\nset logscale y 10\nset format x "%.0b%B"\nset format y "%g"\nset grid')
print('set xlabel "size (bytes)"\nset ylabel "busbw (GB/s)"\nset key top left font ",8" box opaque')
ranks = sorted({k[3] for k in curves})
for coll in colls:
    for tp in tps:
        print(f'set title "{coll}, {tp}"')
        plots = []
        for lib, name, color in (("ccomm", "ccomm", "#1f77b4"), ("ompi", "Open MPI", "#d62728")):
            for i, n in enumerate(ranks):
                pts = sorted(curves.get((coll, tp, lib, n), []))
                if not pts:
                    continue
                path = f"{dat}/{coll}.{tp}.{lib}.{n}.dat"
                with open(path, "w") as f:
                    f.writelines(f"{s} {b:.6g}\n" for s, b in pts)
                dash = 1 if i == 0 else 2
                plots.append(f'"{path}" using 1:2 with linespoints lw 1.5 pt 7 ps 0.4 '
                             f'dt {dash} lc rgb "{color}" title "{name}, {n} ranks"')
        print("plot " + ", ".join(plots) if plots else "set multiplot next")
print("unset multiplot")
EOF
gnuplot "$DAT/plot.gp"
echo "# plot written to $SVG" >&2
