#!/usr/bin/env python3
"""Benchmark of the TUI: startup to first paint, one step, and the browser over 10,000 sessions.

    python3 bench/tui_bench.py [--sessions 10000] [--steps 40]
    python3 bench/tui_bench.py --screenshot assets/session-screen.svg [SESSION [KEYS...]]

Startup and the browser run in a fresh child process each, timed from just before the child is spawned
(so interpreter start, imports, reading and the first frame all count), headless at 120x40. A step is
timed in-process from the key press until the screen has processed it and painted. The browser's memory
is the child's peak resident set size (getrusage). Targets (issue 4): first paint < 300 ms, step < 50 ms,
browser painted < 1 s, < 500 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "sessions"
SIZE = (120, 40)


# ------------------------------------------------------------------ children (run with --child)


def stamp_frames(app: Any, probe: Callable[[], Any] = lambda: None) -> list[tuple[float, Any]]:
    """Record (wall time, probe()) each time the app composes a frame for the terminal. The headless driver
    of a test run writes nothing, so the terminal sequence a real driver would be sent is built here too.
    The pilot's own pauses wait until the app is idle (a worker still reading keeps it busy), so frame
    times are what a user sees; pilot round trips are reported beside them."""
    from textual._compositor import CompositorUpdate

    frames: list[tuple[float, Any]] = []
    display = app._display

    def display_and_stamp(screen: Any, renderable: Any) -> None:
        display(screen, renderable)
        if renderable is not None:
            if isinstance(renderable, CompositorUpdate):
                renderable.render_segments(app.console)
            frames.append((time.time(), probe()))

    app._display = display_and_stamp
    return frames


async def _child_startup(path: str, t0: float) -> dict[str, float]:
    from beavertui.engine.session.store import read_session
    from beavertui.tui.app import BeaverApp
    from beavertui.tui.session_screen import SessionScreen

    t_imported = time.time()
    header, events, problem = read_session(path)
    app = BeaverApp(lambda: SessionScreen(header, events, problem=problem))  # type: ignore[arg-type]
    frames = stamp_frames(app, lambda: isinstance(app.screen, SessionScreen))
    async with app.run_test(size=SIZE) as pilot:
        while not isinstance(app.screen, SessionScreen):
            await pilot.pause(0)
        await pilot.pause()  # the pilot's round trip: the first frame composed and the app idle
        t_idle = time.time()
    t_paint = next((t for t, shown in frames if shown), float("nan"))
    return {
        "first_paint_s": t_paint - t0,
        "imports_s": t_imported - t0,
        "app_to_paint_s": t_paint - t_imported,
        "first_paint_pilot_s": t_idle - t0,
        "cpu_s": _cpu(),
    }


def _cpu() -> float:
    """CPU seconds this process has used (what a wall clock would read on an idle machine, less I/O)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def _child_browser(root: str, t0: float) -> dict[str, float]:
    from beavertui.tui.app import BeaverApp
    from beavertui.tui.browser import BrowserScreen

    app = BeaverApp(lambda: BrowserScreen(Path(root), watch=False))
    out: dict[str, float] = {}

    def rows_shown() -> int | None:  # None: the browser is not on screen yet
        if not isinstance(app.screen, BrowserScreen):
            return None
        return int(app.screen.query_one("#sessions").row_count)

    frames = stamp_frames(app, rows_shown)
    async with app.run_test(size=SIZE) as pilot:
        while not isinstance(app.screen, BrowserScreen):
            await pilot.pause(0)
        await pilot.pause()
        out["table_painted_s"] = time.time() - t0
        screen = app.screen
        while screen.first_rows_at is None:
            await pilot.pause(0.005)
        await pilot.pause()
        out["first_rows_painted_s"] = time.time() - t0
        out["first_rows_cpu_s"] = _cpu()
        while not screen.loaded:
            await pilot.pause(0.01)
        await pilot.pause()
        out["all_rows_s"] = time.time() - t0
        out["all_rows_cpu_s"] = _cpu()
        out["rows"] = screen.query_one("#sessions").row_count
        # when those frames were composed (the pauses above also wait for the reading to go idle)
        out["table_frame_s"] = next((t - t0 for t, n in frames if n is not None), float("nan"))
        out["first_rows_frame_s"] = next((t - t0 for t, n in frames if n), float("nan"))
        for label, keys in (("sort_s", ["6"]), ("resort_s", ["6"]), ("cursor_down_s", ["down"])):
            t = time.perf_counter()
            await pilot.press(*keys)
            await pilot.pause()
            out[label] = time.perf_counter() - t
        await pilot.press("slash", *"outcome:failed")
        t = time.perf_counter()
        await pilot.press("enter")
        await pilot.pause()
        out["filter_s"] = time.perf_counter() - t
        out["filtered_rows"] = screen.query_one("#sessions").row_count
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def child(argv: list[str]) -> None:
    kind, arg, t0 = argv[0], argv[1], float(argv[2])
    fn = _child_startup if kind == "startup" else _child_browser
    print(json.dumps(asyncio.run(fn(arg, t0))))


def spawn(kind: str, arg: str) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.time()
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, arg, repr(t0)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ steps (in process)


async def steps(n: int) -> dict[str, float]:
    sys.path.insert(0, str(ROOT))
    from beavertui.engine.session.store import read_session
    from beavertui.tui.app import BeaverApp
    from beavertui.tui.panes import Pane
    from beavertui.tui.session_screen import SessionScreen

    header, events, problem = read_session(DATA / "degenerate.jsonl")
    app = BeaverApp(lambda: SessionScreen(header, events, problem=problem))  # type: ignore[arg-type]
    fresh: list[float] = []
    fresh_cpu: list[float] = []
    cached: list[float] = []
    to_frame: list[float] = []
    frames = stamp_frames(app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("home")
        keys = ["right"] * 3 + ["left"] * 3
        for i in range(n):
            key = keys[i % len(keys)]
            for pane in app.screen.query(Pane):
                pane._cache.clear()
            frames.clear()
            t, c, wall = time.perf_counter(), time.process_time(), time.time()
            await pilot.press(key)
            await pilot.pause()
            fresh.append(time.perf_counter() - t)
            fresh_cpu.append(time.process_time() - c)
            if frames:
                to_frame.append(frames[-1][0] - wall)
        for i in range(n):
            t = time.perf_counter()
            await pilot.press(keys[i % len(keys)])
            await pilot.pause()
            cached.append(time.perf_counter() - t)
    return {
        "step_fresh_median_ms": statistics.median(fresh) * 1000,
        "step_fresh_p90_ms": sorted(fresh)[int(0.9 * len(fresh))] * 1000,
        "step_fresh_cpu_median_ms": statistics.median(fresh_cpu) * 1000,
        # key press to the last frame composed and turned into terminal output
        "step_to_frame_median_ms": statistics.median(to_frame) * 1000 if to_frame else None,
        "step_to_frame_p90_ms": sorted(to_frame)[int(0.9 * len(to_frame))] * 1000 if to_frame else None,
        "step_cached_median_ms": statistics.median(cached) * 1000,
    }


# ------------------------------------------------------------------ 10,000 sessions


def generate(root: Path, n: int) -> None:
    """n session files made from the recorded test sessions, with varied tasks, models and outcomes."""
    sources = [(DATA / f"{name}.jsonl").read_text() for name in ("degenerate", "stuck", "quick")]
    models = ["gpt-4.1", "qwen2.5-coder-32b", "claude-sonnet-4", "deepseek-v3", "llama-3.3-70b"]
    tasks = [
        f"{fam}_{i:02d}" for fam in ("gemm_tc", "softmax", "layernorm", "scan", "reduce") for i in range(20)
    ]
    rng = random.Random(0)
    for i in range(n):
        text = sources[i % 3]
        text = text.replace('"gemm_tiled_bounds"', f'"{rng.choice(tasks)}"', 1)
        for m in ("gpt-4.1", "qwen2.5-coder-32b", "claude-sonnet-4"):
            text = text.replace(f'"name":"{m}"', f'"name":"{rng.choice(models)}"', 1)
        folder = root / f"run{i // 2000}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"s{i:05d}.jsonl").write_text(text)


async def screenshot(out: Path, session: Path, keys: list[str]) -> None:
    """Save an SVG of the session screen after pressing keys (the README's picture)."""
    from beavertui.engine.session.store import read_session
    from beavertui.tui.app import BeaverApp
    from beavertui.tui.session_screen import SessionScreen

    header, events, problem = read_session(session)
    app = BeaverApp(lambda: SessionScreen(header, events, problem=problem))  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
        app.save_screenshot(filename=out.name, path=str(out.parent))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    if len(sys.argv) > 2 and sys.argv[1] == "--screenshot":
        session = Path(sys.argv[3]) if len(sys.argv) > 3 else DATA / "degenerate.jsonl"
        keys = sys.argv[4:] or ["home", "right"]
        asyncio.run(screenshot(Path(sys.argv[2]), session, keys))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3, help="startup runs (the median is reported)")
    args = ap.parse_args()
    results: dict[str, object] = {"load_average": os.getloadavg(), "cpus": os.cpu_count()}
    startups = [spawn("startup", str(DATA / "degenerate.jsonl")) for _ in range(args.repeat)]
    results["first_paint_s"] = statistics.median(s["first_paint_s"] for s in startups)
    for key in ("imports_s", "app_to_paint_s", "first_paint_pilot_s", "cpu_s"):
        results[f"startup_{key}"] = statistics.median(s[key] for s in startups)
    results.update(asyncio.run(steps(args.steps)))
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        generate(Path(tmp), args.sessions)
        results["generated_s"] = time.perf_counter() - t
        results["browser"] = spawn("browser", tmp)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
