#!/usr/bin/env python3
"""test_doc_examples.py SRCDIR BUILDDIR - run the shell examples of README.md and docs/*.md
that can run on this machine and compare the lines they show with what the commands print.

Each entry of EXAMPLES names a document and a command exactly as it is shown there after
"$ ". The lines below it in the document, up to the next "$ " or the end of the block, are
what it should print. Every shown line must be printed (in any order: ranks print in any
order), after both sides are normalized: "..." in a shown line matches anything; pids,
times, dates, hex ids, job ids and the host name vary from run to run and are masked.
Small counts (files: 10, seq: 7) are compared as they are. The commands run in a fresh
directory where `build` is the build tree and build/bin is first on PATH.
Exit 0 = pass, 1 = fail.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

# (document, command as shown, setup commands run first in the same directory, program it needs)
# The demo's ranks 1 and 3 dump a second time only when their own timeout fires before the
# job-wide dump request is handled: 8 or 10 files (docs/ccdump.md says so). Those two counts
# are masked in its examples; everything else is compared.
DEMO_VARIES = [r'"files": \d+', r'"duplicates": \d+', r"from \d+ file\(s\) \(\d+ duplicate"]
DEMO = ("CCOMM_TIMEOUT=5 CCOMM_DUMP_DIR=dumps CCOMM_RECORDER_DIR=rings "
        "ccrun -n 4 --grace 3 build/examples/train_demo > demo.log 2>&1 || true")
EXAMPLES = [
    ("README.md", "build/bin/ccrun -n 4 build/examples/hello", None, None),
    ("README.md", "CCOMM_TRANSPORT=tcp build/bin/ccrun -n 4 build/examples/hello", None, None),
    ("docs/ccrun.md", "(ulimit -n 64; ccrun -n 16 -- true)", None, None),
    ("docs/ccrun.md", "mpirun --allow-run-as-root --oversubscribe -n 2 build/examples/hello", None,
     "mpirun"),
    ("docs/transports.md",
     "CCOMM_SOCKET_IFNAME==lo CCOMM_TRANSPORT=tcp CCOMM_LOG_LEVEL=INFO ccrun -n 2 build/examples/hello",
     None, None),
    ("docs/transports.md", "CCOMM_SOCKET_IFNAME=nosuch0 CCOMM_TRANSPORT=tcp ccrun -n 2 build/examples/hello",
     None, None),
    ("docs/clog-format.md",
     "CCOMM_CLOG=clog.%r.log ccrun -n 2 build/examples/hello > /dev/null; grep op_id= clog.0.log",
     None, None),
    ("docs/windows.md", "build/bin/ccrun -n 4 build/examples/window_ring", None, None),
    ("docs/windows.md", "CCOMM_TRANSPORT=tcp build/bin/ccrun -n 2 build/examples/window_ring",
     None, None),
    ("docs/ccdump.md", "ccdump diagnose dumps rings", DEMO, None),
    ("docs/ccdump.md", "ccdump diagnose dumps rings --json | python3 -c 'import json,sys; "
     "d=json.load(sys.stdin); print(json.dumps({k: d[k] for k in (\"verdict\", \"exit_status\", "
     "\"job\")}, indent=1))'", DEMO, None),
]


def shown_output(doc_text, command):
    """The lines a document shows under "$ command" (None if the command is not in it)."""
    lines = doc_text.split("\n")
    for i, line in enumerate(lines):
        if line == "$ " + command:
            out = []
            for nxt in lines[i + 1:]:
                if nxt.startswith("$ ") or nxt.startswith("```"):
                    break
                out.append(nxt)
            return out
    # A block of plain commands (README's): the command, then its comment; it shows no output.
    for line in lines:
        if line == command or re.match(re.escape(command) + r"\s+#", line):
            return []
    return None


HOST = socket.gethostname()


def normalize(line, shown, varies=()):
    """Mask what varies between runs. `shown`: the line comes from the document."""
    for v in varies:
        line = re.sub(v, "VARIES", line)
    if shown:
        line = re.sub(r"\bvm\b", "HOST", line)  # the docs were written on a host named vm
    else:
        line = re.sub(r"\b%s\b" % re.escape(HOST), "HOST", line)
    line = re.sub(r"\d{4}-\d\d-\d\dT?[ ]?\d\d:\d\d:\d\d(\.\d+)?Z?", "TIME", line)
    line = re.sub(r"\b[0-9a-f]*[a-f][0-9a-f]*\d[0-9a-f]*\b|\b[0-9a-f]*\d[0-9a-f]*[a-f][0-9a-f]*\b",
                  lambda m: "H" if len(m.group(0)) >= 8 else m.group(0), line)
    # A duration's unit follows its size (654 us in one run, 3.7 ms in the next).
    line = re.sub(r"\b\d+(?:\.\d+)?\s?(?:ns|us|\u00b5s|ms|s)\b", "DUR", line)
    line = re.sub(r"\d+\.\d+", "F", line)  # durations, times
    line = re.sub(r"\d{3,}", "N", line)    # pids, ports, ids, timestamps; small counts stay
    return re.sub(r"\s+", " ", line).strip()  # columns padded to the width of a pid


def matches(shown, printed):
    pattern = "^" + ".*".join(re.escape(part) for part in shown.split("...")) + "$"
    return any(re.match(pattern, p) for p in printed)


def run_example(src, build, doc, command, setup, needs):
    text = open(os.path.join(src, doc)).read()
    want = shown_output(text, command)
    if want is None:
        return "the command is no longer in %s" % doc
    if needs and not shutil.which(needs):
        print("skipped (no %s): %s: %s" % (needs, doc, command))
        return None
    work = tempfile.mkdtemp(prefix="ccomm-doc-")
    try:
        os.symlink(build, os.path.join(work, "build"))
        env = dict(os.environ)
        env["PATH"] = os.path.join(build, "bin") + os.pathsep + env.get("PATH", "")
        env.pop("CCOMM_LOG_LEVEL", None)
        for k in [k for k in env if k.startswith("CCOMM_")]:
            del env[k]
        # Rings of the example's own: a failing one (a missing interface) keeps them, and in
        # /dev/shm/ccomm-$UID they would outlive the test. A command may still name its own.
        env["CCOMM_RECORDER_DIR"] = os.path.join(work, "rings")
        if setup:
            subprocess.run(setup, shell=True, cwd=work, env=env, timeout=180)
        p = subprocess.run(command, shell=True, cwd=work, env=env, timeout=180,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        varies = DEMO_VARIES if setup == DEMO else ()
        printed = [normalize(l, False, varies) for l in p.stdout.split("\n")]
        missing = [w for w in want
                   if w.strip() and not matches(normalize(w, True, varies), printed)]
        if not want and p.returncode != 0:
            return "%s exited %d and the document shows no error:\n%s" % (command, p.returncode,
                                                                           p.stdout)
        if missing:
            return ("%s: %s printed (exit %d):\n%s\nbut not these lines the document shows:\n%s"
                    % (doc, command, p.returncode, p.stdout, "\n".join(missing)))
        print("ok: %s: %s" % (doc, command))
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    src, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    failures = [f for f in (run_example(src, build, *e) for e in EXAMPLES) if f]
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
