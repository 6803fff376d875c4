#!/usr/bin/env python3
"""check-layers.py - holds the tree to the layer table of docs/DESIGN.md.

Every folder of code has a layer; a file may use its own folder and the
folders of lower layers, never a higher one.  Two kinds of use are checked:

  includes  every `#include "x.h"` of a .c or .h file under the layer
            folders names a header of the tree; its folder must not be
            higher than the including file's.
  calls     every symbol an object file of the library (or a main) leaves
            undefined and another object of the tree defines: the
            defining object's folder must not be higher (read with nm, so
            a prototype written by hand instead of an include is caught
            too).

The CLI is a client of the node's ports, never of its internals: besides
the order, tools may use only base, placement and codec.

Every violation is one line "path:line: message" (calls name the object
and symbol), and the exit status is 1 when there is any.  --graph prints
the folder-level include graph (edges with counts), bottom to top.

  check-layers.py --root SRCDIR [--objects OBJ ...] [--graph]
"""
import argparse
import os
import re
import subprocess
import sys

# Bottom to top: (folder, layer name).  Folders of one layer share a rank.
LAYERS = [
    ("src/base", "base", 0),
    ("src/placement", "placement", 1),
    ("proto", "codec", 2),
    ("storage", "storage", 3),
    ("src/membership", "membership", 4),
    ("src/replication", "replication", 5),
    ("src/sim", "simulation", 5),
    ("src/node", "node", 6),
    ("src/cli", "tools", 7),
]
# What a layer may use beyond its own folder, when narrower than "every lower layer".
ONLY = {"src/cli": {"src/base", "src/placement", "proto", "src/sim"}}
# Headers of the build system, not of a layer.
SYSTEM_OK = {"autoconf.h"}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(path):
    for folder, _name, _rank in LAYERS:
        if path == folder or path.startswith(folder + "/"):
            return folder
    return None


def rank(folder):
    for f, _name, r in LAYERS:
        if f == folder:
            return r
    raise KeyError(folder)


def layer_name(folder):
    for f, name, _r in LAYERS:
        if f == folder:
            return name
    raise KeyError(folder)


def allowed(user, used):
    """Whether code in folder user may use folder used."""
    if user == used:
        return True
    if user in ONLY:
        return used in ONLY[user]
    return rank(used) < rank(user)


def sources(root):
    for folder, _name, _rank in LAYERS:
        top = os.path.join(root, folder)
        if not os.path.isdir(top):
            continue
        for dirpath, _dirs, files in os.walk(top):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    full = os.path.join(dirpath, f)
                    yield os.path.relpath(full, root)


def header_map(root, errors):
    where = {}
    for rel in sources(root):
        if not rel.endswith(".h"):
            continue
        base = os.path.basename(rel)
        if base in where:
            errors.append("%s:1: header name also used by %s (names must be unique)" % (rel, where[base]))
        where[base] = rel
    return where


def check_includes(root, errors, edges):
    headers = header_map(root, errors)
    for rel in sources(root):
        user = folder_of(rel)
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                name = os.path.basename(m.group(1))
                if name in SYSTEM_OK:
                    continue
                if "/" in m.group(1):
                    errors.append('%s:%d: #include "%s": include by name; the build puts every layer folder on the path'
                                  % (rel, lineno, m.group(1)))
                if name not in headers:
                    errors.append('%s:%d: #include "%s": no such header in the layer folders' % (rel, lineno, name))
                    continue
                used = folder_of(headers[name])
                edges[(user, used)] = edges.get((user, used), 0) + 1
                if not allowed(user, used):
                    errors.append('%s:%d: #include "%s": %s (%s) may not use %s (%s)'
                                  % (rel, lineno, name, user, layer_name(user), used, layer_name(used)))


def nm(obj, defined):
    args = ["nm", "-P", "--defined-only" if defined else "--undefined-only", obj]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and (not defined or parts[1] in "TDBRVWtdbr" and parts[1].isupper()):
            syms.add(parts[0])
    return syms


def object_folder(root, builddir, obj):
    rel = os.path.relpath(os.path.abspath(obj), builddir)
    return folder_of(rel)


def check_calls(root, objects, errors):
    builddir = os.path.commonpath([os.path.abspath(o) for o in objects]) if objects else ""
    # The objects' paths mirror the source tree below the build directory.
    while builddir and not any(folder_of(os.path.relpath(os.path.abspath(o), builddir)) for o in objects):
        builddir = os.path.dirname(builddir)
    definer = {}
    for obj in objects:
        folder = object_folder(root, builddir, obj)
        if folder is None:
            continue
        for sym in nm(obj, True):
            definer[sym] = (obj, folder)
    for obj in objects:
        user = object_folder(root, builddir, obj)
        if user is None:
            continue
        for sym in sorted(nm(obj, False)):
            if sym not in definer:
                continue
            dobj, used = definer[sym]
            if not allowed(user, used):
                rel = os.path.relpath(os.path.abspath(obj), builddir)
                errors.append("%s: calls %s, defined in %s: %s (%s) may not use %s (%s)"
                              % (rel, sym, os.path.relpath(os.path.abspath(dobj), builddir),
                                 user, layer_name(user), used, layer_name(used)))


def print_graph(edges):
    print("layer include graph (from -> to: includes), bottom to top:")
    for user, _name, _r in LAYERS:
        outs = sorted(((rank(u), u, n) for (f, u), n in edges.items() if f == user and u != user), reverse=True)
        text = ", ".join("%s %d" % (u, n) for _r2, u, n in outs) or "-"
        print("  %-16s -> %s" % (user, text))


def main():
    ap = argparse.ArgumentParser(description="check the layer order of includes and calls")
    ap.add_argument("--root", required=True, help="top of the source tree")
    ap.add_argument("--objects", nargs="*", default=[], help="object files to check for upward calls")
    ap.add_argument("--graph", action="store_true", help="print the folder include graph")
    a = ap.parse_args()
    errors = []
    edges = {}
    check_includes(a.root, errors, edges)
    check_calls(a.root, a.objects, errors)
    if a.graph:
        print_graph(edges)
    for e in errors:
        print(e)
    if errors:
        print("check-layers: %d upward or unknown use(s); the layer table is in docs/DESIGN.md" % len(errors))
        return 1
    n_src = sum(1 for _ in sources(a.root))
    print("check-layers: %d files, %d objects: every include and call runs down the layers" % (n_src, len(a.objects)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
