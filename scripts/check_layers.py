#!/usr/bin/env python3
"""Fails when a file of one layer includes a header of a layer above it (docs/architecture.md).

Usage: check_layers.py SRC_DIR. Test files (*_test.cpp) may include any layer; every other file
may include only its own layer and the layers this table lets it use.
"""
import pathlib
import re
import sys

# Each layer and the layers it may include (besides itself). Keep in step with CMakeLists.txt.
ALLOWED = {
    "common": set(),
    "trace": {"common"},
    "analysis": {"common", "trace"},
    "device": {"common", "trace"},
    "twin": {"common", "trace"},
    "run": {"common", "trace", "device"},
    "act": {"common", "trace", "device"},
    "agent": {"common", "trace", "device", "act"},
    "sim": {"common", "trace", "device", "run", "twin"},
    "plan": {"common", "trace", "analysis", "twin"},
    "store": {"common"},
    "control": {"common", "trace", "device", "run", "act"},
    "report": {"common", "trace", "analysis", "store", "plan"},
    "export": {"common", "trace", "analysis", "device"},
    "session": {"common", "trace", "analysis", "device", "twin", "run", "act", "agent", "control",
                "sim", "plan", "store", "report", "export"},
    "cli": {"common", "trace", "analysis", "device", "twin", "run", "act", "agent", "control", "sim",
            "plan", "store", "report", "export", "session"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/', re.MULTILINE)


def violations(src: pathlib.Path):
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".cpp", ".hpp") or path.name.endswith("_test.cpp"):
            continue
        layer = path.relative_to(src).parts[0]
        if layer not in ALLOWED:
            yield f"{path}: folder '{layer}' is not a known layer (add it to {__file__})"
            continue
        text = path.read_text(encoding="utf-8")
        for m in INCLUDE.finditer(text):
            target = m.group(1)
            if target != layer and target not in ALLOWED[layer]:
                line = text.count("\n", 0, m.start()) + 1
                yield f"{path}:{line}: layer '{layer}' includes '{target}/', a layer above it"


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
