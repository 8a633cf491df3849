#!/bin/sh
# bench/put_plot.sh RESULTS.tsv FILE.svg [TITLE] - bench/put_compare.sh's plot:
# one panel per pattern and transport, log-log against the put size: the
# median time of the latency patterns (flush1 flushring signal1 signalring),
# the bandwidth of the window of puts (bw1); one curve per library and rank
# count. RESULTS.tsv holds put_compare.sh's raw rows ("lib transport ranks
# pattern size time_us algbw"; --keep keeps them). Needs gnuplot
# (apt-get install gnuplot-nox).
set -eu
case "${1:-}" in -h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
[ $# -ge 2 ] || { echo "usage: put_plot.sh RESULTS.tsv FILE.svg [TITLE]" >&2; exit 2; }
RES=$1 SVG=$2 TITLE=${3:-put_compare.sh}
[ -r "$RES" ] || { echo "put_plot.sh: cannot read results \"$RES\"" >&2; exit 2; }
command -v gnuplot >/dev/null 2>&1 ||
    { echo "put_plot.sh: needs gnuplot: install it (apt-get install gnuplot-nox)" >&2; exit 2; }
DAT=$(mktemp -d /tmp/ccomm-putplot.XXXXXX)
trap 'rm -rf "$DAT"' EXIT

python3 - "$RES" "$DAT" "$SVG" "$TITLE" >"$DAT/plot.gp" <<'EOF'
import collections, statistics, sys
res, dat, svg, title = sys.argv[1:5]
NAMES = {"flush1": "put + flush, 1->1", "flushring": "put + flush, ring",
         "signal1": "put + signal + wait, 1->1", "signalring": "put + signal + wait, ring",
         "bw1": "64 puts + flush, 1->1 (bandwidth)"}
pts = collections.defaultdict(list)  # (pattern, tp, lib, n, size) -> [(time, bw)]
for line in open(res):
    f = line.split()
    if len(f) != 7 or f[5] == "refused":
        continue
    pts[(f[3], f[1], f[0], int(f[2]), int(f[4]))].append((float(f[5]), float(f[6])))
if not pts:
    sys.exit("put_plot.sh: no result rows in " + res)
pats = [p for p in NAMES if any(k[0] == p for k in pts)]
tps = sorted({k[1] for k in pts}, key=lambda t: t != "shm")
ranks = sorted({k[3] for k in pts})
print(f'set terminal svg size {460 * len(tps)},{300 * len(pats) + 40} dynamic font "sans,10" '
      'background "white"')
print(f'set output "{svg}"')
print(f'set multiplot layout {len(pats)},{len(tps)} title "window puts: {title}"')
print('set termoption noenhanced\nset logscale x 2\nset logscale y 10\nset format x "%.0b%B"')
print('set format y "%g"\nset grid\nset xlabel "put size (bytes)"')
print('set key top left font ",8" box opaque')
for pat in pats:
    bw = pat == "bw1"
    print(f'set ylabel "{"GB/s" if bw else "time (us)"}"')
    for tp in tps:
        print(f'set title "{NAMES[pat]}, {tp}"')
        plots = []
        for lib, name, color in (("ccomm", "ccomm", "#1f77b4"), ("ompi", "Open MPI", "#d62728")):
            for i, n in enumerate(ranks):
                rows = sorted((k[4], statistics.median(v[1 if bw else 0] for v in vals))
                              for k, vals in pts.items() if k[:4] == (pat, tp, lib, n))
                rows = [r for r in rows if r[1] > 0]
                if not rows:
                    continue
                path = f"{dat}/{pat}.{tp}.{lib}.{n}.dat"
                with open(path, "w") as f:
                    f.writelines(f"{s} {y:.6g}\n" for s, y in rows)
                plots.append(f'"{path}" using 1:2 with linespoints lw 1.5 pt 7 ps 0.4 '
                             f'dt {1 if i == 0 else 2} lc rgb "{color}" title "{name}, {n} ranks"')
        print("plot " + ", ".join(plots) if plots else "set multiplot next")
print("unset multiplot")
EOF
gnuplot "$DAT/plot.gp"
echo "# plot written to $SVG" >&2
