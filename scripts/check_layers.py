#!/usr/bin/env python3
"""Fails when a file of one layer includes a header of a layer above it (docs/architecture.md).

Usage: check_layers.py SRC_DIR. Test files (*_test.cpp) may include any layer; every other file
may include only its own layer and the layers it links in CMakeLists.txt's regime_layer() table.
A CLI file may include only cli/, session/ and common/ headers, although cli links every layer:
it parses, calls one session function and prints, and the work below that is the session's.
"""
import pathlib
import re
import sys

CMAKELISTS = pathlib.Path(__file__).resolve().parent.parent / "CMakeLists.txt"
LAYER_CALL = re.compile(r"regime_layer\(\s*(\w+)(.*?)\)", re.DOTALL)


def folders_from_cmake(text: str):
    """Each source folder (relative to src/, e.g. session/probe) and the layer it belongs to, from
    the DIRS of the regime_layer() table."""
    folders = {}
    for m in LAYER_CALL.finditer(text):
        name, body = m.group(1), m.group(2)
        dirs = re.search(r"\bDIRS\b(.*?)(\bPUBLIC\b|\bPRIVATE\b|$)", body, re.DOTALL)
        for d in (dirs.group(1).split() if dirs else [name]):
            folders[d] = name
    return folders


def allowed_from_cmake(text: str):
    """Each layer and the layers it may include (besides itself): the layers it links PUBLIC in
    the regime_layer() table of CMakeLists.txt, and theirs in turn. The table is written once."""
    direct = {}
    for m in LAYER_CALL.finditer(text):
        name, body = m.group(1), m.group(2)
        public = re.search(r"\bPUBLIC\b(.*?)(\bPRIVATE\b|$)", body, re.DOTALL)
        deps = re.findall(r"\bregime_(\w+)", public.group(1)) if public else []
        direct[name] = set(deps)
    allowed = {}
    for name in direct:
        seen, todo = set(), list(direct[name])
        while todo:
            d = todo.pop()
            if d not in seen:
                seen.add(d)
                todo.extend(direct.get(d, ()))
        allowed[name] = seen
    return allowed


ALLOWED = allowed_from_cmake(CMAKELISTS.read_text(encoding="utf-8"))
FOLDERS = folders_from_cmake(CMAKELISTS.read_text(encoding="utf-8"))


def layer_of(relative: str):
    """The layer of a file or header path relative to src/: that of its deepest listed folder, or
    None for a folder no layer lists."""
    parts = relative.split("/")[:-1]
    for n in range(len(parts), 0, -1):
        folder = "/".join(parts[:n])
        if folder in FOLDERS:
            return FOLDERS[folder]
    return None

# Blanks only, not \s: \s would match the newlines before the line and misreport its number.
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"(([a-z_]+)/[^"]*)"', re.MULTILINE)

# What a file in src/cli/ may include, whatever its layer links: the session layers and common.
CLI_MAY_INCLUDE = {"cli", "session", "scheduler", "node", "common"}


def violations(src: pathlib.Path):
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".cpp", ".hpp") or path.name.endswith("_test.cpp"):
            continue
        folder = path.relative_to(src).parent.as_posix()
        layer = layer_of(path.relative_to(src).as_posix())
        # The session layers are built from the DIRS listed for them, folder by folder: a session
        # file in a folder none lists would not be built at all.
        if folder.split("/")[0] == "session" and folder not in FOLDERS:
            layer = None
        if layer not in ALLOWED:
            yield (f"{path}: folder '{folder}' is not a known layer (add a regime_layer() to "
                   f"{CMAKELISTS})")
            continue
        text = path.read_text(encoding="utf-8")
        for m in INCLUDE.finditer(text):
            header = m.group(1)
            target = layer_of(header) or m.group(2)
            line = text.count("\n", 0, m.start()) + 1
            if target != layer and target not in ALLOWED[layer]:
                yield f"{path}:{line}: layer '{layer}' includes '{target}/', a layer above it"
            elif layer == "cli" and target not in CLI_MAY_INCLUDE:
                yield (f"{path}:{line}: includes \"{header}\": a CLI file includes only cli/, "
                       "session/ and common/ headers (it parses, calls one session function and "
                       "prints; the work below is the session's)")
    yield from mutual_includes(src / "session")


def mutual_includes(src: pathlib.Path):
    """Two modules of the session layers (a header and its source, e.g. study/study.hpp and .cpp)
    that include each other: a step or view that includes its orchestrator while the orchestrator
    includes it. The types both need belong in a header of their own. (The layers below are small
    collaborators, such as a guard and the signal handler that restores it, and are not held to
    this.)"""
    edges = {}
    for path in sorted(src.rglob("*.?pp")):
        if path.name.endswith("_test.cpp"):
            continue
        module = "session/" + path.relative_to(src).with_suffix("").as_posix()
        for m in INCLUDE.finditer(path.read_text(encoding="utf-8")):
            other = m.group(1).rsplit(".", 1)[0]
            if other != module:
                edges.setdefault(module, set()).add(other)
    for a in sorted(edges):
        for b in sorted(edges[a]):
            if a < b and a in edges.get(b, ()):
                yield (f"{src}/{a}: and {b} include each other (move the types both need into a "
                       "header of their own)")


def main() -> int:
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src")
    found = list(violations(src))
    for v in found:
        print(v)
    if found:
        print(f"{len(found)} include(s) against the layering", file=sys.stderr)
        return 1
    print(f"layering ok: {sum(1 for _ in src.rglob('*.?pp'))} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
