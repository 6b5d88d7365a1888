#!/usr/bin/env python3
"""Checks the workspace's `rust-version` against what it really needs: no dependency built for
this platform may declare a newer one (then the workspace's would be a promise the build cannot
keep), and the toolchain running the check must meet it. Reads `cargo metadata` only (no build).

    scripts/msrv-check.py          (exit status 1 on a mismatch, with the packages named)
"""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def version(text):
    return tuple(int(p) for p in text.split(".")[:2])


def main():
    declared = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"][
        "rust-version"
    ]
    host = subprocess.run(
        ["rustc", "-vV"], capture_output=True, text=True, check=True
    ).stdout
    target = re.search(r"^host: (\S+)", host, re.M).group(1)
    rustc = re.search(r"^release: (\S+)", host, re.M).group(1)
    meta = json.loads(
        subprocess.run(
            [
                "cargo", "metadata", "--format-version", "1", "--locked",
                "--features", "yari-cli/wgpu,yari-cli/cuda",
                "--filter-platform", target,
            ],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout
    )
    used = {n["id"] for n in meta["resolve"]["nodes"]}
    newer = sorted(
        (p["rust_version"], p["name"], p["version"])
        for p in meta["packages"]
        if p["id"] in used
        and p.get("rust_version")
        and version(p["rust_version"]) > version(declared)
    )
    ok = True
    if newer:
        ok = False
        print(f"rust-version {declared}, but these dependencies need newer Rust:")
        for rv, name, v in newer:
            print(f"  {name} {v}: rust-version {rv}")
    if version(rustc) < version(declared):
        ok = False
        print(f"this toolchain is rustc {rustc}, older than rust-version {declared}")
    if ok:
        print(
            f"rust-version {declared}: no dependency needs newer Rust "
            f"({len(used)} packages for {target}); rustc {rustc} meets it"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
