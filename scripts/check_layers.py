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

# Blanks only, not \s: \s would match the newlines before the line and misreport its number.
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"(([a-z_]+)/[^"]*)"', re.MULTILINE)

# What a file in src/cli/ may include, whatever its layer links.
CLI_MAY_INCLUDE = {"cli", "session", "common"}


def violations(src: pathlib.Path):
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".cpp", ".hpp") or path.name.endswith("_test.cpp"):
            continue
        layer = path.relative_to(src).parts[0]
        if layer not in ALLOWED:
            yield f"{path}: folder '{layer}' is not a known layer (add a regime_layer() to {CMAKELISTS})"
            continue
        text = path.read_text(encoding="utf-8")
        for m in INCLUDE.finditer(text):
            header, target = m.group(1), m.group(2)
            line = text.count("\n", 0, m.start()) + 1
            if target != layer and target not in ALLOWED[layer]:
                yield f"{path}:{line}: layer '{layer}' includes '{target}/', a layer above it"
            elif layer == "cli" and target not in CLI_MAY_INCLUDE:
                yield (f"{path}:{line}: includes \"{header}\": a CLI file includes only cli/, "
                       "session/ and common/ headers (it parses, calls one session function and "
                       "prints; the work below is the session's)")


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
