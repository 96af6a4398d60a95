#!/usr/bin/env python3
"""Checks README.md and docs/*.md: their links resolve and their commands still run.

    python3 scripts/check_docs.py [--links-only] [--bin PATH] [--steps N] [FILE.md ...]

Links: every relative link `[text](path#anchor)` outside code must name a file or folder
that exists, and an anchor must be a heading of the target Markdown file (GitHub's
slugs: lower case, punctuation dropped, spaces as hyphens, `-1`, `-2` for repeats).

Code blocks, by their fence's language:

- `sh`, `bash`, `shell`: every line is a command, and each runs as written, in order, in a
  scratch folder per Markdown file (holding links to the repository's `worlds/` and
  `examples/`, so relative paths resolve and outputs stay out of the tree). A command
  must exit 0 within 300 seconds. How each kind runs:
  - `perennial ARGS` and `cargo run --release -- ARGS` run the release binary
    (`target/release/perennial`, or `--bin`); bare `cargo run --release` is
    `perennial run`. The step budget is capped so the check stays quick: a `run` without
    `--steps`, or with more than N (`--steps`, default 2000), runs N steps; a `sweep` runs
    a copy of its sweep file whose `steps` is N and `checkpoint_every` N / 2; a `bench run`
    runs N steps of each suite's first seed (a smoke run). Nothing else
    changes, so the trace and checkpoint paths the docs use later still exist.
  - `cargo run --release --example NAME [-- ARGS]` runs the built example with
    `PERENNIAL_EXAMPLE_STEPS` set to N (building it first when it is missing). An example
    that reads no step budget (`regime_separation`, `soak`, `peer_workload`) is checked to
    exist and not run: each takes minutes.
  - `cargo bench --bench NAME`: NAME must be a `[[bench]]` of Cargo.toml; not run.
  - `bash FILE`, `python FILE`, `pip install PATH`, `cargo build`, `cargo test`: FILE or
    PATH must exist; not run (they are the test command itself, or install packages).
  Any other command is an error, so a new kind of command gets a rule here.
- `python`: compiled (a syntax check); `toml`: parsed with `tomllib`.
- `rust` in docs/: refused. Only the README's Rust blocks are doctests (`src/lib.rs`
  includes it); a reference page's would go untested.

Exits 1 after listing every failure, each with its file and line.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python before 3.11: the same parser, installed by python/tests/requirements.txt
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 300
LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")


class Failures:
    """Collects failures, each with its file and line."""

    def __init__(self):
        self.items = []

    def add(self, path, line, message):
        self.items.append(f"{path.relative_to(ROOT)}:{line}: {message}")


def blocks(text):
    """Yields (language, first line number, lines) of every fenced code block."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(2), m.group(3).lower(), i + 1
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        yield lang, start + 1, body
        i += 1


def prose_lines(text):
    """Yields (line number, line) of the lines outside fenced code."""
    in_code, fence = False, ""
    for number, line in enumerate(text.split("\n"), start=1):
        m = FENCE.match(line)
        if m and (not in_code or line.strip().startswith(fence)):
            in_code, fence = (not in_code), m.group(2)
            continue
        if not in_code:
            yield number, line


def without_inline_code(line):
    """The line with its inline code blanked, so a link-like text in code is not a link."""
    return re.sub(r"`[^`]*`", lambda c: " " * len(c.group(0)), line)


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = heading.strip().replace("`", "").replace("*", "").lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path):
    """The anchors of a Markdown file's headings, repeats numbered as GitHub does."""
    seen, result = {}, set()
    for _, line in prose_lines(path.read_text()):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    return result


def check_links(path, failures):
    """Every relative link of one Markdown file resolves, anchors included."""
    for number, line in prose_lines(path.read_text()):
        for m in LINK.finditer(without_inline_code(line)):
            target = m.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            file_part, _, anchor = target.partition("#")
            resolved = (path.parent / file_part).resolve() if file_part else path
            if not resolved.exists():
                failures.add(path, number, f"link {target!r}: {file_part} does not exist")
                continue
            if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                failures.add(path, number, f"link {target!r}: {resolved.name} has no heading #{anchor}")


def commands(body, start):
    """Yields (line number, argv, environment) of each command of a shell block."""
    pending, first = "", start
    for offset, raw in enumerate(body):
        if not pending:
            first = start + offset
        line = raw.rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        try:
            words = shlex.split(line, comments=True)
        except ValueError as error:
            yield first, None, str(error)
            continue
        env = {}
        while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
            key, _, value = words.pop(0).partition("=")
            env[key] = value
        if words:
            yield first, words, env


def bench_names():
    with open(ROOT / "Cargo.toml", "rb") as f:
        return {b["name"] for b in tomllib.load(f).get("bench", [])}


def capped_steps(args, steps):
    """`perennial run` arguments with the step budget capped at `steps`."""
    if "--resume" in args:
        return args
    out = list(args)
    for i, word in enumerate(out):
        if word == "--steps" and i + 1 < len(out):
            out[i + 1] = str(min(int(out[i + 1]), steps))
            return out
        if word.startswith("--steps="):
            out[i] = f"--steps={min(int(word.split('=', 1)[1]), steps)}"
            return out
    return out + ["--steps", str(steps)]


def capped_sweep(args, steps, scratch):
    """`perennial sweep` arguments pointing at a copy of the sweep file with `steps` steps."""
    out = list(args)
    for i, word in enumerate(out[1:], start=1):
        if word.endswith(".toml"):
            text = (scratch / word).read_text()
            text = re.sub(r"(?m)^steps\s*=.*$", f"steps = {steps}", text)
            text = re.sub(r"(?m)^checkpoint_every\s*=.*$", f"checkpoint_every = {max(steps // 2, 1)}", text)
            copy = scratch / "check-docs-sweeps" / Path(word).name
            copy.parent.mkdir(exist_ok=True)
            copy.write_text(text)
            out[i] = str(copy)
            break
    return out


def reads_step_budget(example):
    source = (ROOT / "examples" / f"{example}.rs").read_text()
    return "PERENNIAL_EXAMPLE_STEPS" in source or "main_with_steps" in source


def example_binary(name):
    binary = ROOT / "target" / "release" / "examples" / name
    if not binary.exists():
        subprocess.run(["cargo", "build", "--release", "--quiet", "--example", name], cwd=ROOT, check=True)
    return binary


def plan(words, env, options, scratch):
    """What to do with one command: (argv to run or None, environment, error or None)."""
    env = dict(env)
    if words[0] == "perennial":
        args = words[1:]
    elif words[:3] == ["cargo", "run", "--release"] and "--example" not in words:
        args = words[4:] if words[3:4] == ["--"] else []
        if words[3:] and words[3] != "--":
            return None, env, f"unknown cargo run form: {' '.join(words)}"
    elif words[:3] == ["cargo", "run", "--release"] and "--example" in words:
        name = words[words.index("--example") + 1]
        if not (ROOT / "examples" / f"{name}.rs").exists():
            return None, env, f"no example {name}"
        if not reads_step_budget(name):
            return None, env, None
        args = words[words.index("--") + 1:] if "--" in words else []
        env["PERENNIAL_EXAMPLE_STEPS"] = str(min(int(env.get("PERENNIAL_EXAMPLE_STEPS", options.steps)), options.steps))
        return [str(example_binary(name)), *args], env, None
    elif words[:2] == ["cargo", "bench"]:
        known = bench_names()
        for i, word in enumerate(words):
            if word == "--bench" and words[i + 1] not in known:
                return None, env, f"no [[bench]] named {words[i + 1]} in Cargo.toml"
        return None, env, None
    elif words[:2] in (["cargo", "build"], ["cargo", "test"]):
        return None, env, None
    elif words[0] in ("bash", "sh") or re.search(r"(^|/)python3?$", words[0]):
        if not (ROOT / words[1]).exists():
            return None, env, f"no file {words[1]}"
        return None, env, None
    elif words[:2] == ["pip", "install"]:
        # A path may carry extras, `./python[local-llm]`: the path is what precedes them.
        paths = [w.split("[", 1)[0] for w in words[2:] if w.startswith(".")]
        missing = [p for p in paths if not (ROOT / p).exists()]
        return None, env, (f"no path {missing[0]}" if missing else None)
    else:
        return None, env, f"no rule for the command {words[0]!r} (add one to scripts/check_docs.py)"
    if not args or args[0].startswith("-"):
        args = ["run", *args]
    if args[0] == "run":
        args = ["run", *capped_steps(args[1:], options.steps)]
    elif args[0] == "sweep":
        args = capped_sweep(args, options.steps, scratch)
    elif args[:2] == ["bench", "run"]:
        seeds = [] if "--seeds" in args else ["--seeds", "1"]
        args = ["bench", "run", *capped_steps(args[2:], options.steps), *seeds]
    return [options.bin, *args], env, None


def check_blocks(path, options, failures):
    """Runs one Markdown file's commands and checks its Python and TOML blocks."""
    with tempfile.TemporaryDirectory(prefix="check-docs.") as tmp:
        scratch = Path(tmp)
        for folder in ("worlds", "examples"):
            (scratch / folder).symlink_to(ROOT / folder)
        for lang, start, body in blocks(path.read_text()):
            if lang == "python":
                try:
                    compile("\n".join(body), f"{path}:{start}", "exec")
                except SyntaxError as error:
                    failures.add(path, start + (error.lineno or 1) - 1, f"Python: {error.msg}")
            elif lang == "toml":
                try:
                    tomllib.loads("\n".join(body))
                except tomllib.TOMLDecodeError as error:
                    failures.add(path, start, f"TOML: {error}")
            elif lang == "rust" and path.parent == ROOT / "docs":
                failures.add(path, start, "a Rust block in a reference page is not a doctest: move it to the crate docs or the README")
            elif lang in ("sh", "bash", "shell") and not options.links_only:
                for number, words, env in commands(body, start):
                    if words is None:
                        failures.add(path, number, f"cannot parse the command: {env}")
                        continue
                    argv, run_env, error = plan(words, env, options, scratch)
                    if error:
                        failures.add(path, number, error)
                    elif argv:
                        run(path, number, argv, run_env, scratch, failures)


def expand_globs(argv, scratch):
    """Expands the words with `*` as the shell would, from the scratch folder (a pattern
    matching nothing stays as written, as in sh)."""
    out = []
    for word in argv:
        matches = sorted(str(p.relative_to(scratch)) for p in scratch.glob(word)) if "*" in word and not os.path.isabs(word) else []
        out.extend(matches or [word])
    return out


def run(path, number, argv, env, scratch, failures):
    argv = expand_globs(argv, scratch)
    shown = " ".join(shlex.quote(a) for a in argv)
    print(f"  {path.relative_to(ROOT)}:{number}: {shown}", flush=True)
    # The examples write their output under the temp dir: here, the scratch folder, so the
    # check leaves nothing behind.
    env = {**os.environ, "TMPDIR": str(scratch), **env}
    try:
        done = subprocess.run(
            argv, cwd=scratch, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=TIMEOUT, text=True,
        )
    except subprocess.TimeoutExpired:
        failures.add(path, number, f"`{shown}` took more than {TIMEOUT} s")
        return
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-3:]
        failures.add(path, number, f"`{shown}` exited {done.returncode}: {' / '.join(tail)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="Markdown files (default: README.md and docs/*.md)")
    parser.add_argument("--links-only", action="store_true", help="check links and blocks, run no command")
    parser.add_argument("--bin", default=str(ROOT / "target" / "release" / "perennial"), help="the perennial binary")
    parser.add_argument("--steps", type=int, default=2000, help="step budget cap of runs, sweeps and examples")
    options = parser.parse_args()
    files = [f.resolve() for f in options.files] or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    if not options.links_only and not Path(options.bin).exists():
        sys.exit(f"error: {options.bin} does not exist: build it with `cargo build --release`, or pass --bin")
    failures = Failures()
    for path in files:
        check_links(path, failures)
        check_blocks(path, options, failures)
    for item in failures.items:
        print(item, file=sys.stderr)
    print(f"check_docs: {len(files)} files, {len(failures.items)} failures", file=sys.stderr)
    sys.exit(1 if failures.items else 0)


if __name__ == "__main__":
    main()
