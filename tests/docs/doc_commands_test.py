#!/usr/bin/env python3
"""Runs every command shown in README.md and docs/*.md, so the documentation cannot drift.

How blocks are found, what runs where and what is asserted: docs/testing.md ("The documentation
test"). In short: a fenced block with `$ ` prompts is a console session (each prompt a command,
the lines after it its output); a fenced `sh`/`bash`/`shell` block without prompts is a list of
commands (output not shown, so not checked). An HTML comment just before a block changes how it
is treated: `<!-- doc-test: skip (reason) -->`, `<!-- doc-test: expect-fail (reason) -->`,
`<!-- doc-test: exit N[,N...] -->`, `<!-- doc-test: setup COMMANDS -->`.

Usage: doc_commands_test.py --regime BIN --regimed BIN --fake-nvml LIB [--only FILE] [--jobs N]
Exit 0 when every block behaves as its markdown says, 1 otherwise.
"""
import argparse
import concurrent.futures
import difflib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
COMMAND_INFO = {"sh", "bash", "shell", "console"}
# An untagged block without prompts that starts like this is a list of commands that must be
# tagged `sh` (run) or `text` (not commands); the test fails rather than silently skip it.
COMMAND_WORDS = re.compile(
    r"^([A-Z_][A-Z0-9_]*=\S*\s+)*(\S*/)?(sudo|regime|regimed|srun|sbatch|salloc|sacct|scancel|cmake|"
    r"bash|sh|pip|python3|curl|systemctl|export|prometheus|git|nvidia-smi|ctest|\./\S+)\s")
MARKER = re.compile(r"^\s*<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([A-Za-z0-9_+-]*)\s*$")
BLOCK_TIMEOUT_S = 90
MARK = "@@doc-test"
KNOWN = {}  # (file, first command) -> reason: see known_failures()
UPDATES = None  # with --suggest: (file, shown line, nearest output line)


class Block:
    def __init__(self, path, line, info, body, markers):
        self.path, self.line, self.info, self.body, self.markers = path, line, info, body, markers
        self.commands = []  # (text, shown output lines)

    @property
    def where(self):
        return f"{os.path.relpath(self.path, ROOT)}:{self.line}"


def join_continuations(lines):
    """Lines ending in a backslash continue on the next one, as in the shell."""
    out, cur = [], None
    for ln in lines:
        if cur is not None:
            cur += "\n" + ln
        else:
            cur = ln
        if not cur.endswith("\\"):
            out.append(cur)
            cur = None
    if cur is not None:
        out.append(cur)
    return out


def parse_commands(block):
    lines = block.body
    if any(ln.startswith("$ ") for ln in lines):
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                i += 1
                continue
            text = lines[i][2:]
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text += "\n" + lines[i]
            here = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", text)
            if here:  # a here-document's lines belong to the command, up to its end word
                while i + 1 < len(lines):
                    i += 1
                    text += "\n" + lines[i]
                    if lines[i].strip() == here.group(1):
                        break
            i += 1
            shown = []
            while i < len(lines) and not lines[i].startswith("$ "):
                shown.append(lines[i])
                i += 1
            block.commands.append((text, shown))
        return True
    if block.info in COMMAND_INFO:
        for text in join_continuations(lines):
            if text.strip() and not text.lstrip().startswith("#"):
                block.commands.append((text, []))
        return True
    return False


INDENTED_COMMAND = re.compile(r"^(    |\t)\s*(\$ |(\S*/)?(regime|regimed|sudo|cmake|ctest|python3)\s|\./)")
LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s")


def indented_commands(path):
    """Indented code blocks that hold commands: markdown shows them, but this test reads fences
    only, so each would be an example nobody runs. Lines continuing a list item are not blocks."""
    lines = open(path, encoding="utf-8").read().split("\n")
    found, fence, in_list = [], None, False
    for i, ln in enumerate(lines):
        m = FENCE.match(ln)
        if m and fence is None:
            fence = m.group(2)
            continue
        if fence is not None:
            if re.match(r"^\s*" + re.escape(fence) + r"\s*$", ln):
                fence = None
            continue
        if LIST_ITEM.match(ln):
            in_list = True
        elif ln.strip() and not ln.startswith((" ", "\t")):
            in_list = False
        after_blank = i == 0 or not lines[i - 1].strip()
        if not in_list and after_blank and INDENTED_COMMAND.match(ln):
            found.append(f"{os.path.relpath(path, ROOT)}:{i + 1}: an indented block of commands "
                         "(the test reads fences only): fence it, ```sh or a console block with "
                         "`$ ` to run it, ```text for a synopsis")
    return found


def find_blocks(path):
    """Every fenced block of a markdown file with the doc-test markers just before it."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.groups()
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*" + re.escape(fence) + r"\s*$", lines[j]):
            j += 1
        markers, k = [], i - 1
        while k >= 0 and (MARKER.match(lines[k]) or not lines[k].strip()):
            if lines[k].strip():
                markers.insert(0, MARKER.match(lines[k]).group(1))
            k -= 1
        body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1:j]]
        blocks.append(Block(path, i + 1, info.lower(), body, markers))
        i = j + 1
    return blocks


NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")
PATH = re.compile(r"(?<![\w.])(~|/)[\w.@%+=:,~/-]*[\w/]")


def mask(line):
    """A line as compared: paths and numbers stand for any path and any number, spaces collapse."""
    line = PATH.sub("PATH", line)
    line = NUMBER.sub("#", line)
    return " ".join(line.split()).rstrip(",")


# The figures a page's reader acts on, compared by value rather than masked: a power (a cap, a
# limit: a number followed by W), a percentage, and a confidence. Each is read to the precision the
# page shows it, within a tolerance (DEFAULT_TOLERANCE; a block's `tolerance` marker widens it for
# figures that vary from run to run, such as real-time runs on the fake NVML).
DEFAULT_TOLERANCE = {"W": 0.01, "pct": 0.5, "conf": 0.02}  # W relative; %, confidence absolute


def figures(line):
    """The decision figures of a line, in order: (kind, value, decimals shown), kind W, pct or conf;
    None for every other number, so two lines with the same mask pair their numbers by position."""
    out, line = [], PATH.sub("PATH", line)
    for m in NUMBER.finditer(line):
        text, before, rest = m.group(0), line[:m.start()], line[m.end():]
        kind = None
        if re.match(r"\s?W(?![A-Za-z])", rest):
            kind = "W"
        elif re.match(r"\s?%", rest):
            kind = "pct"
        elif re.search(r"confidence\s*[:=]?\s*$", before):
            kind = "conf"
        decimals = len(text.split(".")[1]) if "." in text and "e" not in text.lower() else 0
        try:
            out.append((kind, float(text), decimals) if kind else None)
        except ValueError:
            out.append(None)
    return out


def figures_agree(shown, got, tolerance):
    """Whether an output line shows the same decision figures as the page's line (same mask): each
    output figure rounded to the page's precision is within the tolerance of the page's."""
    for s, g in zip(figures(shown), figures(got)):
        if s is None or g is None:
            continue
        kind, want, decimals = s
        have = round(g[1], decimals)
        allowed = 0.5 * 10 ** -decimals if decimals else 0.5
        allowed = max(allowed, abs(want) * tolerance["W"] if kind == "W" else tolerance[kind])
        if abs(have - want) > allowed + 1e-9:
            return False
    return True


def key_lines(shown):
    """The shown output lines that are checked: all but blanks and lines eliding text."""
    return [ln for ln in shown if ln.strip() and "..." not in ln and "\u2026" not in ln
            and not re.match(r"^\s*\[exit \d+\]\s*$", ln)]


def status_printers(text):
    """Whether a command prints the previous command's exit status (checked through its output)."""
    return re.match(r"^\s*echo\s+.*(\$\?|PIPESTATUS)", text) is not None


def known_failures():
    """Blocks of pages this test may not mark (their owners edit them), known to fail: in
    tests/docs/known_failures.txt, one per line, `FILE | the block's first command | reason`."""
    known = {}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known_failures.txt")
    for ln in open(path, encoding="utf-8"):
        if ln.strip() and not ln.startswith("#"):
            f, rest = ln.split(" | ", 1)
            cmd, reason = rest.rsplit(" | ", 1)
            f, cmd, reason = f.strip(), cmd.strip(), reason.strip()
            known[(f, cmd)] = reason
    return known


def parse_markers(block):
    kinds = {"skip": None, "expect-fail": None, "exit": None, "setup": [],
             "tolerance": dict(DEFAULT_TOLERANCE)}
    for m in block.markers:
        word, _, rest = m.partition(" ")
        rest = rest.strip()
        if word in ("skip", "expect-fail"):
            reason = re.match(r"^\((.+)\)$", rest)
            if not reason:
                raise ValueError(f"{block.where}: '{word}' needs a reason in parentheses: {m}")
            kinds[word] = reason.group(1)
        elif word == "exit":
            kinds["exit"] = [int(x) for x in rest.split(",")]
        elif word == "setup":
            kinds["setup"].append(rest)
        elif word == "tolerance":
            parts = re.match(r"^((?:\w+=[\d.]+%?\s*)+)\((.+)\)$", rest)
            if not parts:
                raise ValueError(f"{block.where}: 'tolerance' takes W=N%, pct=N, conf=N and a "
                                 f"reason in parentheses: {m}")
            for item in parts.group(1).split():
                name, _, value = item.partition("=")
                if name not in DEFAULT_TOLERANCE:
                    raise ValueError(f"{block.where}: tolerance of '{name}': expected W, pct or conf")
                kinds["tolerance"][name] = (float(value.rstrip("%")) / 100 if name == "W"
                                            else float(value))
        else:
            raise ValueError(f"{block.where}: unknown doc-test marker '{word}' (expected skip, "
                             "expect-fail, exit, setup or tolerance)")
    return kinds


def script_for(block, kinds):
    """One bash script for the block: each command between markers that carry its exit status,
    with $? and PIPESTATUS put back before the next command (so `echo $?` works as shown)."""
    out = ["set +e", "cd \"$DOC_TEST_WORK\""]
    out += kinds["setup"]
    out.append("(exit 0)")
    for n, (text, _) in enumerate(block.commands):
        out.append(text)
        out.append("__ps=(\"${PIPESTATUS[@]}\")")
        out.append(f"printf '\\n{MARK} status {n} %s\\n' \"${{__ps[-1]}}\"")
        if n + 1 < len(block.commands):
            out.append(f"printf '\\n{MARK} start {n + 1}\\n'")
        out.append("if [ ${#__ps[@]} -gt 1 ]; then (exit ${__ps[0]}) | (exit ${__ps[-1]}); "
                   "else (exit ${__ps[0]}); fi")
    # Background jobs a block started end with it.
    out.append("for j in $(jobs -p); do kill $j 2>/dev/null; done; wait")
    return f"printf '{MARK} start 0\\n'\n" + "\n".join(out) + "\n"


def run_block(block, kinds, env):
    script = script_for(block, kinds)
    t0 = time.monotonic()
    p = subprocess.Popen(["bash", "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=BLOCK_TIMEOUT_S)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # anything the block left running
        except ProcessLookupError:
            pass
    if timed_out:
        out, _ = p.communicate()
    return out.decode("utf-8", "replace"), timed_out, time.monotonic() - t0


def check_block(block, kinds, out, timed_out):
    """The block's problems: a command's exit status, or a shown line missing from its output."""
    problems = []
    if timed_out:
        problems.append(f"timed out after {BLOCK_TIMEOUT_S} s")
    starts, statuses = {}, {}
    lines = out.split("\n")
    for idx, ln in enumerate(lines):
        m = re.match(rf"^{MARK} (start|status) (\d+)(?: (\d+))?$", ln)
        if m and m.group(1) == "start":
            starts[int(m.group(2))] = idx
        elif m:
            statuses[int(m.group(2))] = int(m.group(3))
    exits = kinds["exit"]
    if exits is not None and len(exits) not in (1, len(block.commands)):
        problems.append(f"'exit' lists {len(exits)} statuses for {len(block.commands)} commands")
    for n, (text, shown) in enumerate(block.commands):
        first = text.split("\n")[0]
        if n not in statuses:
            problems.append(f"`{first}` did not finish")
            continue
        shown_exit = [int(m.group(1)) for m in (re.match(r"^\s*\[exit (\d+)\]\s*$", ln)
                                                    for ln in shown) if m]
        if shown_exit:
            want = shown_exit[0]  # the docs' way of showing a status: a line "[exit N]"
        elif exits is not None:
            want = exits[0] if len(exits) == 1 else exits[min(n, len(exits) - 1)]
        elif n + 1 < len(block.commands) and status_printers(block.commands[n + 1][0]):
            want = None  # the next command prints it, and its shown output says what it must be
        else:
            want = 0
        if want is not None and statuses[n] != want:
            problems.append(f"`{first}` exited {statuses[n]}, expected {want}")
        # Shown lines are looked for from the command's start to the block's end: a background
        # job's lines may come out while a later command runs.
        got = {}
        for ln in lines[starts.get(n, 0):]:
            if not ln.startswith(MARK):
                got.setdefault(mask(ln), []).append(ln)
        missing, differ = [], []
        for ln in key_lines(shown):
            same_shape = got.get(mask(ln))
            if not same_shape:
                missing.append(ln)
            elif not any(figures_agree(ln, g, kinds["tolerance"]) for g in same_shape):
                differ.append((ln, same_shape[0]))
        for ln, g in differ:
            problems.append(f"`{first}`: a figure changed: the page shows {ln.strip()!r}, the "
                            f"output {g.strip()!r}")
            if UPDATES is not None:
                UPDATES.append((block.path, ln, g))
        if missing and UPDATES is not None:
            outs = [ln for ln in lines[starts.get(n, 0):] if ln.strip() and not ln.startswith(MARK)]
            for ln in missing:
                near = difflib.get_close_matches(ln, outs, 1, 0.6)
                if near:
                    UPDATES.append((block.path, ln, near[0]))
        if missing:
            problems.append(f"`{first}`: {len(missing)} of {len(key_lines(shown))} shown lines "
                            f"not in the output, first: {missing[0].strip()!r}")
    return problems


def make_sandbox(args, name):
    """A folder that stands for the user's: HOME, the state folders, the fake NVML's GPUs, the
    repository's data (linked, read-only use) and the fixtures the docs name (train.py, ...)."""
    top = tempfile.mkdtemp(prefix=f"regime-doc-{name}-")
    work, home, bindir = (os.path.join(top, d) for d in ("work", "home", "bin"))
    for d in (work, home, bindir, os.path.join(work, "build", "ci")):
        os.makedirs(d)
    for entry in ("tests", "data", "scripts", "workloads", "python", "deploy", "report", "docs",
                  "packaging", "slurm"):
        if os.path.exists(os.path.join(ROOT, entry)):
            os.symlink(os.path.join(ROOT, entry), os.path.join(work, entry))
    for f in os.listdir(FIXTURES):
        shutil.copy(os.path.join(FIXTURES, f), os.path.join(work, f))
    # The fake NVML's GPUs the docs show by default (two H200s); a page's setup may replace them.
    shutil.copy(os.path.join(ROOT, "tests", "fake_nvml", "example_config.json"),
                os.path.join(work, "fake-nvml.json"))
    os.symlink(ROOT, os.path.join(work, "regime"))  # the checkout, as docs name it (regime/python)
    for name_, binary in (("regime", args.regime), ("regimed", args.regimed)):
        os.symlink(binary, os.path.join(bindir, name_))
        os.symlink(binary, os.path.join(work, "build", "ci", name_))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("REGIME_", "FAKE_NVML_", "XDG_", "SUDO_", "CUDA_", "SLURM_"))}
    env.update({
        "HOME": home,
        "PATH": bindir + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
        "REGIME_STATE_DIR": os.path.join(top, "state"),
        "REGIME_SYSTEM_STATE_DIR": os.path.join(top, "state"),
        "REGIME_NVML_LIBRARY": args.fake_nvml,
        "FAKE_NVML_CONFIG": os.path.join(work, "fake-nvml.json"),
        "FAKE_NVML_STATE": os.path.join(top, "fake-nvml-state.json"),
        "DOC_TEST_WORK": work,
        "PYTHONPATH": os.path.join(ROOT, "python"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
    })
    return top, env


def run_file(args, path):
    """Every block of one file, in order, in one sandbox (later blocks may use earlier runs)."""
    report = {"file": os.path.relpath(path, ROOT), "run": 0, "commands": 0, "skipped": [],
              "expected_fail": [], "problems": [], "seconds": 0.0}
    report["problems"] += indented_commands(path)
    top, env = make_sandbox(args, os.path.basename(path).replace(".md", ""))
    try:
        for block in find_blocks(path):
            try:
                kinds = parse_markers(block)
            except ValueError as e:
                report["problems"].append(str(e))
                continue
            if not parse_commands(block):
                first = next((ln for ln in block.body if ln.strip()), "")
                if block.info == "" and COMMAND_WORDS.match(first):
                    report["problems"].append(
                        f"{block.where}: an untagged block of commands: tag it ```sh to run it or "
                        "```text if it shows no command to run")
                continue
            if not block.commands:
                continue
            if kinds["skip"]:
                report["skipped"].append(f"{block.where}: {kinds['skip']}")
                continue
            known = KNOWN.get((report["file"], "$ " + block.commands[0][0].split("\n")[0].strip()))
            if known and not kinds["expect-fail"]:
                kinds["expect-fail"] = known
            out, timed_out, seconds = run_block(block, kinds, env)
            report["seconds"] += seconds
            report["run"] += 1
            report["commands"] += len(block.commands)
            problems = check_block(block, kinds, out, timed_out)
            if kinds["expect-fail"]:
                if problems:
                    report["expected_fail"].append(f"{block.where}: {kinds['expect-fail']}")
                else:
                    report["problems"].append(
                        f"{block.where}: marked expect-fail ({kinds['expect-fail']}) but every "
                        "command now works as shown: remove the marker")
                continue
            for p in problems:
                report["problems"].append(f"{block.where}: {p}")
            if problems and args.verbose:
                report["problems"].append(f"{block.where}: output was:\n{out}")
    finally:
        if not args.keep:
            shutil.rmtree(top, ignore_errors=True)
    return report


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--regime", required=True)
    ap.add_argument("--regimed", required=True)
    ap.add_argument("--fake-nvml", required=True)
    ap.add_argument("--only", action="append", help="a markdown file (repeatable)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--verbose", action="store_true", help="print a failing block's output")
    ap.add_argument("--keep", action="store_true", help="keep the sandboxes")
    ap.add_argument("--suggest", action="store_true",
                    help="rewrite each missing shown line as the nearest line of the real output "
                         "(then review the diff: the docs show real output)")
    args = ap.parse_args()
    global UPDATES, KNOWN
    KNOWN = known_failures()
    if args.suggest:
        UPDATES = []
    for a in ("regime", "regimed", "fake_nvml"):
        p = getattr(args, a)
        if not os.path.isfile(p):
            sys.exit(f"doc_commands_test: --{a.replace('_', '-')} {p}: no such file")
        setattr(args, a, os.path.abspath(p))
    # The binaries copied once, beside a link to the repository's data (which they find from
    # their own folder): a rebuild while the test runs cannot swap them under a command.
    binaries = tempfile.mkdtemp(prefix="regime-doc-bin-")
    os.symlink(os.path.join(ROOT, "data"), os.path.join(binaries, "data"))
    os.makedirs(os.path.join(binaries, "bin"))
    for a in ("regime", "regimed"):
        copy = os.path.join(binaries, "bin", a)
        shutil.copy2(getattr(args, a), copy)
        setattr(args, a, copy)
    files = [os.path.abspath(f) for f in args.only] if args.only else (
        [os.path.join(ROOT, "README.md")] +
        sorted(os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
               if f.endswith(".md")))
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        reports = list(pool.map(lambda f: run_file(args, f), files))
    shutil.rmtree(binaries, ignore_errors=True)
    failed = False
    for r in reports:
        print(f"{r['file']}: {r['run']} blocks run ({r['commands']} commands, "
              f"{r['seconds']:.1f} s), {len(r['skipped'])} skipped, "
              f"{len(r['expected_fail'])} expected to fail, {len(r['problems'])} problems")
        for s in r["skipped"]:
            print(f"  skipped {s}")
        for s in r["expected_fail"]:
            print(f"  still fails as marked: {s}")
        for p in r["problems"]:
            print(f"  FAIL {p}")
            failed = True
    for path, shown, actual in UPDATES or []:
        if "regime-doc-" in actual:
            continue  # a sandbox path: left for a person to write
        lines = open(path, encoding="utf-8").read().split("\n")
        for i, ln in enumerate(lines):
            if ln.endswith(shown) and not ln[:len(ln) - len(shown)].strip():
                lines[i] = ln[:len(ln) - len(shown)] + actual
                break
        open(path, "w", encoding="utf-8").write("\n".join(lines))
    total = {k: sum(len(r[k]) if isinstance(r[k], list) else r[k] for r in reports)
             for k in ("run", "commands", "skipped", "expected_fail")}
    print(f"doc-test: {len(files)} files, {total['run']} blocks run ({total['commands']} commands), "
          f"{total['skipped']} skipped, {total['expected_fail']} expected to fail, "
          f"{time.monotonic() - t0:.1f} s: {'FAILED' if failed else 'ok'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
