#!/usr/bin/env python3
"""Holds the runtime's subsystems to one direction of dependency.

Every file under runtime/ belongs to one subsystem: the folder it sits in
(runtime/<subsystem>/...) or the folder of its public header
(runtime/include/hyrt/<subsystem>/...); the headers directly in
runtime/include/hyrt/ are the C ABI every subsystem may use. A quoted
#include that reaches a subsystem not listed below as a dependency of the
includer's is a back edge: it is printed with its file and line, and the
check fails. Usage: check-runtime-layers.py SOURCE_DIR
"""
import os
import re
import sys

# What each subsystem may include besides itself and BASE, lower layers
# first: text knows nothing of artifacts, the engine nothing of ranks or
# HTTP, and only the command-line front ends see everything.
BASE = {"abi", "support"}  # the C ABI and header-only helpers (bounded JSON)
ALLOWED = {
    "abi": set(),
    "support": set(),
    "reference": set(),
    "cpu": {"reference"},
    "text": set(),
    "artifact": {"text"},
    "engine": {"text", "artifact"},
    "structured": {"text", "engine"},
    "parallel": {"artifact", "engine"},
    "serving": {"text", "artifact", "engine", "structured"},
    "cli": {"text", "artifact", "engine", "parallel", "serving", "structured"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def subsystem(runtime, path):
    """The subsystem of a path under runtime/, or None outside it."""
    rel = os.path.relpath(path, runtime)
    if rel.startswith(".."):
        return None
    parts = rel.split(os.sep)
    if parts[:2] == ["include", "hyrt"]:
        return parts[2] if len(parts) > 3 else "abi"
    return parts[0] if len(parts) > 1 else None


def resolve(runtime, source_dir, includer, target):
    """The file an #include "target" in `includer` names, as the build finds it."""
    candidates = [os.path.join(os.path.dirname(includer), target),
                  os.path.join(runtime, "include", target),
                  os.path.join(source_dir, target)]
    for c in candidates:
        if os.path.exists(c):
            return os.path.normpath(c)
    return None


def main():
    source_dir = os.path.abspath(sys.argv[1])
    runtime = os.path.join(source_dir, "runtime")
    back_edges, checked = [], 0
    for root, _, files in os.walk(runtime):
        for name in sorted(files):
            if not name.endswith((".h", ".cpp")):
                continue
            path = os.path.join(root, name)
            mine = subsystem(runtime, path)
            if mine not in ALLOWED:
                back_edges.append(f"{path}: in no known subsystem ('{mine}'): "
                                  "add it to ALLOWED in this script")
                continue
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = resolve(runtime, source_dir, path, m.group(1))
                    theirs = subsystem(runtime, target) if target else None
                    checked += 1
                    if theirs is None or theirs == mine:
                        continue
                    if theirs not in ALLOWED[mine] | BASE:
                        back_edges.append(
                            f"{os.path.relpath(path, source_dir)}:{number}: "
                            f"{mine} includes {m.group(1)} ({theirs}); {mine} "
                            f"may include only {sorted(ALLOWED[mine] | BASE | {mine})}")
    for e in back_edges:
        print("FAIL:", e)
    if back_edges:
        return 1
    print(f"runtime layers: {checked} includes, every one along "
          "text -> artifact -> engine -> parallel/serving -> cli")
    return 0


if __name__ == "__main__":
    sys.exit(main())
