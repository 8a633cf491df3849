#!/usr/bin/env python3
"""test_exports.py SRC LIB [NM] - libccomm.so exports exactly its declared API.

The declared API is every function a header of include/ccomm/ marks CC_API,
plus the one entry the core offers its own plugins (CC_PLUGIN_API in
lib/core/plugin.h: the NCCL interposer links libccomm.so and fetches the
core's table through it). The exported list is `nm -D --defined-only` of the
library. Both directions fail the test: a symbol exported that no header
declares (a helper that lost its `static`, a missing hidden visibility) and
a declaration that nothing exports (a function declared and never defined,
or defined without CC_API). CC_API anywhere else in lib/ is an error too: an
export the public headers do not show.
"""
import os
import re
import subprocess
import sys

# A declaration: the macro, a return type, the name right before "(".
DECL = re.compile(r"\b(CC_API|CC_PLUGIN_API)\b([^;{]*?)\b([A-Za-z_]\w*)\s*\(", re.S)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def strip_macro_lines(text):
    # #define CC_API ... and friends are not declarations.
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)


def declared_in(path, macro):
    with open(path, encoding="utf-8") as f:
        text = strip_macro_lines(strip_comments(f.read()))
    return {m.group(3) for m in DECL.finditer(text) if m.group(1) == macro}


def declared(src):
    inc = os.path.join(src, "include", "ccomm")
    names = set()
    for h in sorted(os.listdir(inc)):
        if h.endswith(".h") or h.endswith(".h.in"):  # version.h is made from version.h.in
            names |= declared_in(os.path.join(inc, h), "CC_API")
    names |= declared_in(os.path.join(src, "lib", "core", "plugin.h"), "CC_PLUGIN_API")
    return names


def stray_cc_api(src):
    """Headers of lib/ that mark a declaration CC_API (only include/ may)."""
    bad = []
    for root, _, files in os.walk(os.path.join(src, "lib")):
        for f in files:
            if f.endswith(".h") and declared_in(os.path.join(root, f), "CC_API"):
                bad.append(os.path.relpath(os.path.join(root, f), src))
    return sorted(bad)


def exported(lib, nm):
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        kind, name = parts[-2], parts[-1].split("@")[0]
        # Text, data and weak symbols the library defines; "A" are version nodes.
        if kind in "TtDdBbRrWwVvGgSsi" and kind != "A":
            names.add(name)
    # The toolchain's own, present in every shared object.
    return names - {"_init", "_fini"}


def main():
    if len(sys.argv) < 3:
        print("usage: test_exports.py SRC LIB [NM]", file=sys.stderr)
        return 2
    src, lib = sys.argv[1], sys.argv[2]
    nm = sys.argv[3] if len(sys.argv) > 3 else "nm"
    want, have = declared(src), exported(lib, nm)
    if len(want) < 50:
        print(f"FAIL: only {len(want)} declarations found under {src}/include/ccomm: "
              "the header parser is broken")
        return 1
    fail = 0
    for name in sorted(have - want):
        print(f"FAIL: {lib} exports {name}, which no header of include/ccomm declares CC_API")
        fail = 1
    for name in sorted(want - have):
        print(f"FAIL: {name} is declared CC_API but {lib} does not export it")
        fail = 1
    for path in stray_cc_api(src):
        print(f"FAIL: {path} declares CC_API functions: only include/ccomm/ may")
        fail = 1
    if not fail:
        print(f"ok: {lib} exports exactly the {len(want)} declared functions")
    return fail


if __name__ == "__main__":
    sys.exit(main())
