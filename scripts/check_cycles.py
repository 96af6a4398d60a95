#!/usr/bin/env python3
"""Lists the import cycles among the files of src/ (exit 1 when there is one).

A file depends on another when it names an item defined there: through `use crate::...`,
`use super::...`, `use self::...` or a path written in the code (`crate::trace::TraceRow`).
A name re-exported by a `pub use` is followed to the file that defines it, and the
re-export itself is not a dependency: a `mod.rs` that lists its leaf modules and re-exports
their API depends on none of them. A cycle is a set of files that reach each other.

    python3 scripts/check_cycles.py            # the cycles, or "no import cycle among N files"
    python3 scripts/check_cycles.py --edges    # also every file's dependencies
"""

import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

# `use` trees may span lines; read each statement up to its semicolon.
USE_RE = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M | re.S)
PATH_RE = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
INLINE_MOD_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*\{", re.M)
ITEM_RE = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?(?:fn|struct|enum|trait|type|const|static|union|macro_rules!)\s+([A-Za-z_][A-Za-z0-9_]*)",
    re.M,
)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def inline_modules(text):
    """(start, end, name) of each inline `mod name { ... }` block, by brace matching."""
    out = []
    for m in INLINE_MOD_RE.finditer(text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        out.append((m.end(), i, m.group(1)))
    return out


def nesting(blocks, offset):
    """The inline module names enclosing `offset`, outermost first."""
    return [name for start, end, name in blocks if start <= offset < end]


def module_files():
    """Maps each module path (a tuple of names, () for the crate root) to its file."""
    files = {}
    for path in SRC.rglob("*.rs"):
        rel = path.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        if parts == ["main"]:
            continue
        if parts[-1] in ("mod", "lib"):
            parts = parts[:-1]
        files[tuple(parts)] = path
    return files


def expand_use_tree(tree):
    """`a::{b, c::{d, e as f}}` -> [[a, b], [a, c, d], [a, c, e]] (aliases dropped)."""
    tree = re.sub(r"\s+as\s+[A-Za-z_][A-Za-z0-9_]*", "", tree)
    tree = re.sub(r"\s+", "", tree)

    def split_top(s):
        depth, start, out = 0, 0, []
        for i, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                out.append(s[start:i])
                start = i + 1
        out.append(s[start:])
        return [x for x in out if x]

    def walk(prefix, s):
        if "{" in s and s.endswith("}"):
            head, inner = s.split("{", 1)
            head = [p for p in head.split("::") if p]
            for part in split_top(inner[:-1]):
                yield from walk(prefix + head, part)
        else:
            yield prefix + [p for p in s.split("::") if p]

    return list(walk([], tree))


class Crate:
    def __init__(self):
        self.files = module_files()
        self.texts = {m: strip_comments(p.read_text()) for m, p in self.files.items()}
        self.reexports = {m: {} for m in self.files}
        self.items = {m: set(ITEM_RE.findall(t)) for m, t in self.texts.items()}
        for m, text in self.texts.items():
            for vis, tree in USE_RE.findall(text):
                if not vis:
                    continue
                for path in expand_use_tree(tree):
                    if path and path[-1] not in ("*", "self"):
                        self.reexports[m][path[-1]] = self.absolute(m, path)

    def absolute(self, module, path):
        """The absolute segments of `path` written in `module`, or None for other crates."""
        head, rest = path[0], path[1:]
        if head == "crate":
            return list(rest)
        if head == "self":
            return list(module) + list(rest)
        if head == "super":
            base = list(module)
            while path and path[0] == "super":
                base = base[:-1]
                path = path[1:]
            return base + list(path)
        if tuple(module) + (head,) in self.files:
            return list(module) + list(path)
        return None

    def defining_file(self, segments, seen=None):
        """The module whose file defines the item `segments` names (following re-exports)."""
        seen = seen or set()
        key = tuple(segments)
        if key in seen:
            return None
        seen.add(key)
        for cut in range(len(segments), -1, -1):
            module = tuple(segments[:cut])
            if module not in self.files:
                continue
            rest = segments[cut:]
            if rest and rest[0] not in self.items[module]:
                target = self.reexports[module].get(rest[0])
                if target is not None:
                    return self.defining_file(target + list(rest[1:]), seen)
            return module
        return None

    def dependencies(self, module):
        text = self.texts[module]
        blocks = inline_modules(text)
        deps = set()
        paths = []
        for m in USE_RE.finditer(text):
            if m.group(1):
                continue
            inner = tuple(module) + tuple(nesting(blocks, m.start()))
            paths.extend((inner, p) for p in expand_use_tree(m.group(2)))
        body = USE_RE.sub(lambda m: " " * len(m.group(0)), text)
        for m in PATH_RE.finditer(body):
            inner = tuple(module) + tuple(nesting(blocks, m.start()))
            paths.append((inner, [m.group(1)] + [p for p in m.group(2).split("::") if p]))
        for inner, path in paths:
            if not path:
                continue
            absolute = self.absolute(inner, path)
            if absolute is None:
                continue
            target = self.defining_file(absolute)
            if target is not None and target != module:
                deps.add(target)
        return deps


def cycles(graph):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def name(module, crate):
    return str(crate.files[module].relative_to(SRC.parent))


def main():
    crate = Crate()
    graph = {m: crate.dependencies(m) for m in crate.files}
    if "--edges" in sys.argv:
        for m in sorted(graph):
            print(name(m, crate), "->", ", ".join(sorted(name(d, crate) for d in graph[m])))
    found = cycles(graph)
    for comp in found:
        members = set(comp)
        print("cycle:", " <-> ".join(name(m, crate) for m in comp))
        for m in comp:
            for d in sorted(graph[m] & members):
                print(f"    {name(m, crate)} -> {name(d, crate)}")
    if found:
        print(f"{len(found)} import cycle(s) among {len(graph)} files")
        return 1
    print(f"no import cycle among {len(graph)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
