#!/usr/bin/env python3
"""Prints each crate's module graph and fails on an import cycle between a crate's modules.

A module is a top-level module of the crate (`src/foo.rs` or `src/foo/`, its submodules folded
into it); an edge A -> B is a `crate::B` path anywhere in A's files (`use` lines and inline
paths alike), test modules included. `lib.rs`/`main.rs` only declare and re-export, so they
are left out.

    scripts/module-graph.py [--quiet]      (exit status 1 when a crate has a cycle)
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATH = re.compile(r"\bcrate::(?:\{([^}]*)\}|([a-z_][a-z0-9_]*))")


def top_module(src: Path, file: Path):
    rel = file.relative_to(src)
    if rel.parts[0] in ("lib.rs", "main.rs"):
        return None
    return rel.parts[0].removesuffix(".rs")


def graph(src: Path):
    modules = {}
    for file in sorted(src.rglob("*.rs")):
        module = top_module(src, file)
        if module is None:
            continue
        edges = modules.setdefault(module, set())
        text = file.read_text(encoding="utf-8")
        text = re.sub(r"//[^\n]*", "", text)
        for group, single in PATH.findall(text):
            names = [single] if single else [n.strip().split("::")[0] for n in group.split(",")]
            for name in names:
                if name and name != module:
                    edges.add(name)
    # Only edges to the crate's own modules (not to items `lib.rs` re-exports).
    return {m: sorted(e & modules.keys()) for m, e in modules.items()}


def cycle(g):
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in g[m]:
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in g:
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def main():
    quiet = "--quiet" in sys.argv
    cycles = 0
    for src in sorted(ROOT.glob("crates/*/src")):
        g = graph(src)
        found = cycle(g)
        if not quiet:
            print(f"{src.parent.name}:")
            for m, e in sorted(g.items()):
                print(f"  {m} -> {', '.join(e) if e else '(none)'}")
        if found:
            cycles += 1
            print(f"CYCLE in {src.parent.name}: {' -> '.join(found)}")
    print(f"module graphs: {len(list(ROOT.glob('crates/*/src')))} crates, {cycles} with a cycle")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
