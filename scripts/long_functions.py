#!/usr/bin/env python3
"""Lists the functions of src/ longer than a limit (default 100 lines, signature to closing brace).

Usage: long_functions.py [--limit N] SRC_DIR. Exits 1 when one is found, so a test can hold the
limit. It reads C++ as text: strings, characters and comments are blanked (a digit separator,
60'000, is no character literal), then every brace that opens a function body (a ')' before it,
possibly followed by qualifiers, and not a control statement or a lambda inside another
function) is matched to its closing brace.
"""
import pathlib
import re
import sys

CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else)\s*(\(.*)?$", re.DOTALL)
QUALIFIERS = re.compile(r"\)\s*(const|noexcept|override|final|mutable|->\s*[\w:<>,\s*&]+|\s)*$")


def in_number(text: str, i: int) -> bool:
    """Whether the quote at text[i] stands inside a number (C++14's 60'000, 0xFF'FF, 1'000.5): the
    word it ends starts with a digit. A character literal's prefix (u8'a', L'a') starts with a
    letter."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "_.'"):
        j -= 1
    return j < i and (text[j].isdigit() or text[j] == "." and text[j + 1].isdigit())


def blank(text: str) -> str:
    """Strings, character literals and comments replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'" and in_number(text, i):
            out.append(c)  # a digit separator (60'000), not a character literal
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text: str):
    """(name, first line, last line) of each function body that is not inside another."""
    code = blank(text)
    stack = []  # for each open brace: (is_function, start line, name)
    last_stop = 0
    for i, c in enumerate(code):
        if c == "{":
            head = code[last_stop:i].strip()
            inside_function = any(f for f, _, _ in stack)
            is_function = (not inside_function and head.endswith(")") or
                           bool(QUALIFIERS.search(head))) and not inside_function and \
                not CONTROL.search(head.split("\n")[-1]) and "=" not in head.split("(")[0]
            name = ""
            if is_function:
                m = re.search(r"([\w:~]+)\s*\(", head)
                name = m.group(1) if m else "?"
                start = code.count("\n", 0, last_stop + len(code[last_stop:i]) -
                                   len(code[last_stop:i].lstrip())) + 1
            else:
                start = 0
            stack.append((is_function, start, name))
            last_stop = i + 1
        elif c == "}":
            if stack:
                is_function, start, name = stack.pop()
                if is_function:
                    yield name, start, code.count("\n", 0, i) + 1
            last_stop = i + 1
        elif c == ";":
            last_stop = i + 1
    return


def main() -> int:
    args = sys.argv[1:]
    limit = 100
    if args[:1] == ["--limit"]:
        limit, args = int(args[1]), args[2:]
    src = pathlib.Path(args[0] if args else "src")
    found = []
    for path in sorted(src.rglob("*.?pp")):
        for name, first, last in functions(path.read_text(encoding="utf-8")):
            if last - first + 1 > limit:
                found.append((last - first + 1, f"{path}:{first}: {name} is {last - first + 1} lines"))
    for _, line in sorted(found, reverse=True):
        print(line)
    print(f"{len(found)} function(s) over {limit} lines", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
