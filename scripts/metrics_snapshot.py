"""Dump the metrics of every recorded run and session folder in the repository, to compare two commits.

    python3 scripts/metrics_snapshot.py > before.json      # on one commit
    python3 scripts/metrics_snapshot.py > after.json       # on another
    python3 scripts/metrics_snapshot.py --diff before.json after.json

Each source (a run archive under tests/data, unpacked into a temporary folder, or a folder of session
files) goes through `beavertui metrics --format json` with the default seed, so two commits that score
alike print the same object. The diff lists every path whose value differs; it exits 1 when one does.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _sources(tmp: Path) -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    for archive in sorted((ROOT / "tests" / "data").glob("*.tar.gz")):
        dest = tmp / archive.name.removesuffix(".tar.gz")
        dest.mkdir()
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
        for run_json in sorted(dest.rglob("run.json")):
            found.append((f"{archive.name}:{run_json.parent.relative_to(dest)}", run_json.parent))
    folders = {p.parent for p in (ROOT / "tests" / "data").rglob("*.jsonl")}
    folders |= {p.parent for p in (ROOT / "sessions").rglob("*.jsonl")}
    for folder in sorted(folders):
        found.append((str(folder.relative_to(ROOT)), folder))
    return found


def snapshot() -> dict[str, object]:
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as name:
        for label, path in _sources(Path(name)):
            proc = subprocess.run(
                [sys.executable, "-m", "beavertui", "metrics", str(path), "--format", "json"],
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            if proc.returncode != 0:
                out[label] = {"exit": proc.returncode, "stderr": proc.stderr.strip().splitlines()[-1:]}
                continue
            try:
                out[label] = json.loads(proc.stdout)
            except json.JSONDecodeError:
                out[label] = {"unparsed": proc.stdout[:200]}
    return out


def _walk(a: object, b: object, path: str, diffs: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                diffs.append(f"{path}/{key}: only {'after' if key in b else 'before'}")
            else:
                _walk(a[key], b[key], f"{path}/{key}", diffs)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _walk(x, y, f"{path}[{i}]", diffs)
    elif a != b:
        diffs.append(f"{path}: {json.dumps(a)[:80]} -> {json.dumps(b)[:80]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.diff:
        before, after = (json.loads(Path(p).read_text()) for p in args.diff)
        diffs: list[str] = []
        _walk(before, after, "", diffs)
        for line in diffs:
            print(line)
        print(f"{len(diffs)} differences over {len(after)} sources", file=sys.stderr)
        return 1 if diffs else 0
    json.dump(snapshot(), sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
