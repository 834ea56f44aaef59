#!/usr/bin/env python3
"""The code's layers, checked: every #include of the project's own headers
points down (or within its room), never up; and no source file grows past its
size cap.

The rooms, lowest first (docs/layout.md draws them):

    parsers -> rules -> engine/io -> engine/state -> engine/scan -> engine/models
            -> engine/reports -> engine/run -> engine/corpus -> cli

A file may include headers of its own room and of rooms below it. tests/,
bench/ and fuzz targets sit above everything and may include anything.

Usage: layers.py REPO_ROOT
"""
import os
import re
import sys

ROOMS = [
    "parsers",
    "rules",
    "engine/io",
    "engine/state",
    "engine/scan",
    "engine/models",
    "engine/reports",
    "engine/run",
    "engine/corpus",
    "cli",
]

# No file over ~600 lines (issue 21). The files below were longer when the cap
# came in: each may shrink, never grow; a file leaves this list once it is
# split under the cap.
DEFAULT_CAP = 600
CAPS = {
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def room_of(path):
    best = None
    for i, room in enumerate(ROOMS):
        if path == room or path.startswith(room + "/"):
            if best is None or len(room) > len(ROOMS[best]):
                best = i
    return best


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    problems = []
    seen_rooms = set()
    for top in ("parsers", "rules", "engine", "cli"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".cc", ".h")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                mine = room_of(rel)
                if mine is None:
                    problems.append(f"{rel}: in no room (engine files live in one of {', '.join(ROOMS[2:9])})")
                    continue
                seen_rooms.add(ROOMS[mine])
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    lines = f.readlines()
                for n, line in enumerate(lines, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = m.group(1)
                    theirs = room_of(target)
                    if theirs is None:
                        continue  # generated or third-party
                    if theirs > mine:
                        problems.append(f"{rel}:{n}: includes {target}: {ROOMS[mine]} may not include "
                                        f"{ROOMS[theirs]} (a room above it)")
                cap = CAPS.get(rel, DEFAULT_CAP)
                if len(lines) > cap:
                    problems.append(f"{rel}: {len(lines)} lines, over its cap of {cap} "
                                    "(split it where it already has parts)")
    for rel in CAPS:
        if not os.path.exists(os.path.join(root, rel)):
            problems.append(f"{rel}: in CAPS but gone: drop it from tests/layers.py")
    for room in ROOMS:
        if room not in seen_rooms:
            problems.append(f"{room}: a room with no files (drop it or fill it)")
    for p in problems:
        print(p)
    print(f"layers: {'FAILED' if problems else 'ok'}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
