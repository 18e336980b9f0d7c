#!/usr/bin/env python3
"""Fails if a workspace crate declares a dependency its Rust sources never use.

    python3 scripts/check_unused_deps.py

For every member of the workspace, each key of [dependencies], [dev-dependencies] and
[build-dependencies] must appear in the crate's `.rs` files (src/, tests/, build.rs...)
as a path (`name::`), in `use name` or `extern crate name` (dashes read as
underscores), outside comments. Runs in CI next to the tests (a fraction of a second;
the same check as cargo-machete, without installing it)."""
import glob
import os
import re
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sources(crate_dir):
    """The crate's Rust code with comments removed."""
    text = []
    for path in glob.glob(os.path.join(crate_dir, "**", "*.rs"), recursive=True):
        if os.path.relpath(path, crate_dir).startswith("target" + os.sep):
            continue
        with open(path) as f:
            code = f.read()
        code = re.sub(r"/\*.*?\*/", "", code, flags=re.S)
        text.append(re.sub(r"//.*", "", code))
    return "\n".join(text)


def unused(crate_dir):
    with open(os.path.join(crate_dir, "Cargo.toml"), "rb") as f:
        manifest = tomllib.load(f)
    code = sources(crate_dir)
    out = []
    for table in ("dependencies", "dev-dependencies", "build-dependencies"):
        for name in manifest.get(table, {}):
            ident = re.escape(name.replace("-", "_"))
            used = rf"(?<![\w:]){ident}::|\buse\s+{ident}\b|\bextern\s+crate\s+{ident}\b"
            if not re.search(used, code):
                out.append(f"{os.path.relpath(crate_dir, ROOT)}: [{table}] {name} is never used")
    return out


def main():
    with open(os.path.join(ROOT, "Cargo.toml"), "rb") as f:
        members = tomllib.load(f)["workspace"]["members"]
    problems = [p for m in members for p in unused(os.path.join(ROOT, m))]
    for p in problems:
        print(p)
    print(f"unused dependencies: {len(problems)} in {len(members)} crates")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
