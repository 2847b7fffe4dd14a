"""The Ray executor on a real two-node Ray cluster on this machine (a head and a second node, one CPU each),
with the batch's driver a separate `beavertui batch` process, as on a cluster.

A node's workers start in the folder its raylet runs in, with the raylet's environment, not the driver's:
what a single-node instance (whose workers are the driver's children) never shows. Sessions that run at once
run on both nodes (each session holds a CPU, each node has one).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # a Ray instance starts in tens of seconds: run the module early

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "recorded"
RECORDINGS = CORPUS / "vec_scale.recordings.jsonl"


class TwoNodes:
    def __init__(self, cluster: Any, second: Any, cache: Path) -> None:
        self.cluster = cluster
        self.second = second
        self.cache = cache
        """The nodes' XDG_CACHE_HOME."""
        self.address: str = cluster.address

    def kill_second(self) -> None:
        """What `ray stop` does on that node: its raylet and every worker it started, killed."""
        raylet = self.second.all_processes["raylet"][0].process.pid
        for pid in _children(raylet):
            os.kill(pid, signal.SIGKILL)
        self.cluster.remove_node(self.second, allow_graceful=False)


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoNodes]:
    pytest.importorskip("ray")
    from ray._private.utils import get_ray_address_file
    from ray.cluster_utils import Cluster

    # the head writes its address where `ray.init()` and a batch without --address look for a cluster made on
    # this machine: put back what was there, so that nothing else joins this one
    marker = Path(get_ray_address_file(None))
    before = marker.read_text() if marker.exists() else None
    # the workers import this checkout, as the driver does, and keep their caches in a folder of the test's
    cache = tmp_path_factory.mktemp("node-cache")
    env = {"PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache), "BEAVERTUI_REPLY_CACHE": ""}
    # a cluster started as `ray start --head` starts one here, without RAY_AUTH_MODE: it checks no token, even
    # where an earlier test in this process (a local ray.init) left the variable set
    mp = pytest.MonkeyPatch()
    mp.delenv("RAY_AUTH_MODE", raising=False)
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False, "env_vars": env}
    )
    try:
        if before is None:
            marker.unlink(missing_ok=True)
        else:
            marker.write_text(before)
        second = cluster.add_node(num_cpus=1, env_vars=env)
        cluster.wait_for_nodes()
        yield TwoNodes(cluster, second, cache)
    finally:
        cluster.shutdown()
        mp.undo()


def batch(
    *args: object, cwd: Path, env: dict[str, str | None] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`beavertui batch ARGS` in its own process; ``env``: variables set, or taken away where None."""
    merged: dict[str, str | None] = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "beavertui", "batch", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout,
        env={k: v for k, v in merged.items() if v is not None},
    )  # fmt: skip


def rows(run_dir: Path) -> list[str]:
    from beavertui.engine.metrics.attempts import export_rows

    out = []
    for r in export_rows(run_dir):
        for key in ("run_id", "session_id"):
            r.pop(key, None)
        out.append(json.dumps(r, sort_keys=True))
    return sorted(out)


def test_relative_paths_name_what_they_name_on_the_driver(tmp_path: Path, nodes: TwoNodes) -> None:
    """`--models scripted:FILE` and `--toolchain recorded:FILE` relative to the driver's folder: a worker
    started in its raylet's folder found neither, and every session failed ("my.toml: no such script file");
    now each session runs in the driver's folder and the run equals the local executor's."""
    shutil.copy(
        ROOT / "beavertui" / "engine" / "models" / "scripts" / "vec_scale_demo.toml", tmp_path / "my.toml"
    )
    shutil.copy(RECORDINGS, tmp_path / "rec.jsonl")
    common = ("--corpus", CORPUS, "--models", "scripted:my.toml", "--toolchain", "recorded:rec.jsonl", "--samples", 2,
              "--sessions-dir", tmp_path, "--quiet")  # fmt: skip
    ray = batch(*common, "--executor", "ray", "--address", nodes.address, "--run-id", "ray", cwd=tmp_path)
    assert ray.returncode == 0, ray.stderr[-800:]
    local = batch(*common, "--run-id", "local", cwd=tmp_path)
    assert local.returncode == 0, local.stderr[-800:]
    assert rows(tmp_path / "ray") == rows(tmp_path / "local") != []


def test_a_key_the_nodes_lack_is_one_line_before_anything_is_written(tmp_path: Path, nodes: TwoNodes) -> None:
    """The driver had the key, the nodes (started without it) had not: their workers called the endpoint with
    none, and every session ended as an infrastructure failure. Now the batch stops first, naming the variable."""
    from tests.loopback_endpoint import Endpoint, completion

    def answer(model: str, body: dict[str, object], headers: dict[str, str]) -> tuple[str, object]:
        if headers.get("authorization") != "Bearer nodes-test-key":
            return ("status", (401, {"error": {"message": "no key"}}))
        return ("json", completion(model, "no code"))

    with Endpoint(answer) as ep:
        p = batch("--corpus", CORPUS, "--models", "m1", "--base-url", ep.url, "--api-key-env", "BEAVERTUI_NODES_KEY",
                  "--no-stream", "--toolchain", f"recorded:{RECORDINGS}", "--executor", "ray", "--address", nodes.address,
                  "--run-id", "r", "--sessions-dir", tmp_path, "--quiet",
                  cwd=tmp_path, env={"BEAVERTUI_NODES_KEY": "nodes-test-key"})  # fmt: skip
    assert p.returncode == 2, p.stderr[-800:]
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("beavertui: the Ray node ") and "lacks BEAVERTUI_NODES_KEY" in line, p.stderr[
        -800:
    ]
    assert "nodes-test-key" not in p.stderr
    assert not (tmp_path / "r").exists()
    assert not any(body.get("messages") for _model, body, _headers in ep.requests)  # no session called it

    # a server that lists its models to a caller without a key needs none: the nodes may lack it
    with Endpoint(lambda model, body, headers: ("json", completion(model, "no code")), models=["m1"]) as ep:
        p = batch("--corpus", CORPUS, "--models", "m1", "--base-url", ep.url, "--api-key-env", "BEAVERTUI_NODES_KEY",
                  "--no-stream", "--toolchain", f"recorded:{RECORDINGS}", "--executor", "ray", "--address", nodes.address,
                  "--run-id", "open", "--sessions-dir", tmp_path, "--quiet",
                  cwd=tmp_path, env={"BEAVERTUI_NODES_KEY": "nodes-test-key"})  # fmt: skip
    assert p.returncode == 0, p.stderr[-800:]
    assert {headers.get("authorization") for _model, _body, headers in ep.requests} == {"Bearer none"}


def test_the_default_reply_cache_is_each_nodes_own(tmp_path: Path, nodes: TwoNodes) -> None:
    """The default reply cache is a folder under the driver's home, which a node may not have, or not let its
    workers write: they were sent the driver's folder and every session failed there (OSError, exit 3).
    Here the driver's default is a folder no one can make; the workers keep the replies under their own."""
    from tests.loopback_endpoint import Endpoint, completion

    reference = (CORPUS / "vec_scale" / "reference.cu").read_text()

    def answer(model: str, body: dict[str, object], headers: dict[str, str]) -> tuple[str, object]:
        return ("json", completion(model, f"The fix:\n```cuda\n{reference}```\n"))

    with Endpoint(answer) as ep:
        p = batch("--corpus", CORPUS, "--models", "m1", "--base-url", ep.url, "--no-stream", "--reply-cache-sampled",
                  "--toolchain", f"recorded:{RECORDINGS}", "--executor", "ray", "--address", nodes.address,
                  "--run-id", "r", "--sessions-dir", tmp_path, "--quiet",
                  cwd=tmp_path, env={"XDG_CACHE_HOME": "/proc/no-such-home", "BEAVERTUI_REPLY_CACHE": None})  # fmt: skip
    assert p.returncode == 0, p.stderr[-800:]
    assert (
        json.loads((tmp_path / "r" / "run.json").read_text())["reply_cache"]
        == "/proc/no-such-home/beavertui/replies"
    )
    assert any((nodes.cache / "beavertui" / "replies").rglob("*.json*"))


def test_a_token_asked_for_but_missing_here_is_said_as_such(tmp_path: Path, nodes: TwoNodes) -> None:
    """`ray start --head` checks no token unless started with RAY_AUTH_MODE=token; a driver given that
    variable without a token of its own stops before connecting. It was told the cluster "refused this
    driver: it checks a token; set RAY_AUTH_MODE=token", which was set, and the cluster checks none."""
    env: dict[str, str | None] = {"RAY_AUTH_MODE": "token", "HOME": str(tmp_path), "RAY_AUTH_TOKEN": None,
                                  "RAY_AUTH_TOKEN_PATH": None}  # fmt: skip
    p = batch("--demo", "--executor", "ray", "--address", nodes.address, "--run-id", "r", "--sessions-dir", tmp_path,
              cwd=tmp_path, env=env)  # fmt: skip
    assert p.returncode == 2, p.stderr[-800:]
    assert p.stderr.splitlines()[-1] == (
        "beavertui: RAY_AUTH_MODE=token is set here but no Ray token was found, so the driver did not connect to "
        f"the Ray cluster at {nodes.address}: give the cluster's token (RAY_AUTH_TOKEN, or the file "
        "~/.ray/auth_token copied from the head), or unset RAY_AUTH_MODE for a cluster started without it, which "
        "checks none"
    ), p.stderr[-800:]
    assert not (tmp_path / "r").exists()
    # without the variable, the same driver runs the batch on that cluster
    ok = batch("--demo", "--executor", "ray", "--address", nodes.address, "--run-id", "r", "--sessions-dir", tmp_path,
               "--quiet", cwd=tmp_path, env={"HOME": str(tmp_path), "RAY_AUTH_MODE": None})  # fmt: skip
    assert ok.returncode == 0, ok.stderr[-800:]


def test_a_node_with_other_beavertui_code_is_one_line_before_anything_is_written(
    tmp_path: Path, nodes: TwoNodes
) -> None:
    """The driver imports a copy of this checkout with one source file changed (the same version), the nodes
    this checkout: a node's workers run other code than the driver's, which sent sessions to them as to any
    node (one of five failed to run there, exit 3). Now the batch stops first, in one line (exit 2), naming a
    node and the file that differs, and writes nothing. (The driver's copy, not a third node's: the check
    compares the two the same way, and no node has to start for it.)"""
    copy = tmp_path / "other"
    shutil.copytree(ROOT / "beavertui", copy / "beavertui", ignore=shutil.ignore_patterns("__pycache__"))
    changed = copy / "beavertui" / "engine" / "session" / "usage.py"
    changed.write_text(changed.read_text() + "\n# another build of the same version\n")
    p = batch("--demo", "--executor", "ray", "--address", nodes.address, "--run-id", "r",
              "--sessions-dir", tmp_path, "--quiet", cwd=tmp_path, env={"PYTHONPATH": str(copy)})  # fmt: skip
    assert p.returncode == 2, p.stderr[-800:]
    line = p.stderr.strip().splitlines()[-1]
    names = {
        f"{n.address.split(':')[0]} (node {n.node_id[:8]})" for n in (nodes.cluster.head_node, nodes.second)
    }
    said = re.match(
        r"beavertui: the Ray node (.+? \(node \w+\)) runs other beavertui code than this driver ", line
    )
    assert said and said.group(1) in names, line
    assert line[said.end() :].startswith(
        f"(engine/session/usage.py differs; its package at {ROOT / 'beavertui'}, this driver's at "
        f"{copy / 'beavertui'}) (and 1 more node(s)): "
    ), line  # both nodes run other code than this driver
    assert not (tmp_path / "r").exists()


def test_a_node_lost_mid_batch_fails_its_session_once_and_resume_finishes_it(
    tmp_path: Path, nodes: TwoNodes
) -> None:
    """Two sessions wait on the endpoint at once, one on each node; the second node is killed (its raylet and
    workers, as `ray stop` there does). Its session fails in one line (exit 3) and the others finish on the
    head; `--resume` continues the cut one. No session is lost or run twice: the attempts equal the local
    executor's on the same batch. The driver wrote every file: the nodes have no run folder."""
    from tests.loopback_endpoint import Endpoint, completion

    reference = (CORPUS / "vec_scale" / "reference.cu").read_text()
    hold = threading.Event()

    def answer(model: str, body: dict[str, object], headers: dict[str, str]) -> tuple[str, object]:
        hold.wait(60)
        return ("json", completion(model, f"The fix:\n```cuda\n{reference}```\n"))

    common = ("--corpus", CORPUS, "--models", "m1", "--no-stream", "--toolchain", f"recorded:{RECORDINGS}",
              "--samples", 4, "--sessions-dir", tmp_path, "--quiet")  # fmt: skip
    with Endpoint(answer) as ep:
        cmd = [sys.executable, "-m", "beavertui", "batch", *map(str, common), "--base-url", ep.url,
               "--executor", "ray", "--address", nodes.address, "--run-id", "ray"]  # fmt: skip
        proc = subprocess.Popen(cmd, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while len(ep.requests) < 2 and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(ep.requests) == 2, (
                proc.stderr.read() if proc.poll() is not None and proc.stderr else "waited"
            )
            nodes.kill_second()
            hold.set()
            _out, err = proc.communicate(timeout=120)
        finally:
            hold.set()
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 3, err[-800:]
        (failure,) = [
            json.loads(line) for line in (tmp_path / "ray" / "infra.jsonl").read_text().splitlines()
        ]
        assert failure["detail"].startswith("WorkerFailure: ") and "\n" not in failure["detail"], failure
        again = batch("--resume", tmp_path / "ray", "--executor", "ray", "--address", nodes.address, "--base-url",
                      ep.url, "--quiet", cwd=tmp_path)  # fmt: skip
        assert again.returncode == 0, again.stderr[-800:]
        local = batch(*common, "--base-url", ep.url, "--run-id", "local", cwd=tmp_path)
        assert local.returncode == 0, local.stderr[-800:]
    sessions = sorted((tmp_path / "ray").rglob("vec_scale__s*.jsonl"))
    assert len(sessions) == 4
    for s in sessions:
        kinds = [json.loads(line)["kind"] for line in s.read_text().splitlines()]
        assert kinds.count("verdict") == 1 and kinds[-1] == "end", (s.name, kinds)
    assert rows(tmp_path / "ray") == rows(tmp_path / "local")
    assert len(rows(tmp_path / "ray")) == 4
