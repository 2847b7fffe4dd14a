"""Feedback level L4: ncu's CSV parsed from text, the per-kernel summary, the prompt, and the refusal.

The CSV samples in tests/data/ncu are hand-written in ncu's layout with round numbers (README there);
the values below are worked out from them by hand. ``test_recorded_h200_l4_session`` replays the real
H200 recording of scripts/gpu-l4.sh once it is stored in tests/data/l4.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beavertui.engine.errors import BeaverError
from beavertui.engine.loop.run import run_session
from beavertui.engine.models.scripted import ScriptedModel
from beavertui.engine.session.events import Profiled, Request, StageResult
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.store import read_session
from beavertui.engine.timing.profile import kernel_line, ncu_command, parse_ncu_profile, summarise
from beavertui.engine.toolchain.local import LocalToolchain, metrics_of
from beavertui.engine.toolchain.recorded import RecordedToolchain, load_recordings
from tests.engine.loop.test_loop_session import reply, vec_scale_task

DATA = Path(__file__).resolve().parents[2] / "data"
NCU = DATA / "ncu"
RECORDINGS = DATA / "recorded" / "vec_scale.recordings.jsonl"
L4_RECORDING = DATA / "l4"


def test_parse_skips_the_tools_own_lines_and_reads_every_launch() -> None:
    launches = parse_ncu_profile((NCU / "sample_candidate.csv").read_text())
    assert [(i, name.split("(")[0]) for i, name, _ in launches] == [
        (0, "scale_kernel"),
        (1, "fill_kernel"),
        (2, "scale_kernel"),
    ]
    first = launches[0][2]
    assert first["launch__shared_mem_per_block_dynamic"] == 1024.0  # "1,024"
    assert first["gpu__time_duration.sum"] == 1500.0
    assert parse_ncu_profile("==PROF== no kernels were profiled\n") == []


def test_summary_by_hand() -> None:
    """scale_kernel, two launches: occupancy (40 + 50) / 2 = 45%, DRAM 25%, SM 15%, registers the larger
    (40), 40 x 256 = 10240 per block, 0 + 1024 B shared, 1500 + 2500 ns; stalls averaged: long_scoreboard
    10, lg_throttle 4, wait 1, barrier 0.5 (top three shown). fill_kernel (100 ns) comes second."""
    kernels = summarise(parse_ncu_profile((NCU / "sample_candidate.csv").read_text()))
    assert [k.name.split("(")[0] for k in kernels] == ["scale_kernel", "fill_kernel"]
    scale = kernels[0]
    assert scale.launches == 2
    assert scale.metrics["achieved_occupancy_pct"] == pytest.approx(45.0)
    assert scale.metrics["registers_per_thread"] == 40.0
    assert scale.top_stalls() == [("long_scoreboard", 10.0), ("lg_throttle", 4.0), ("wait", 1.0)]
    assert kernel_line(scale) == (
        "scale_kernel (2 launches): occupancy 45.0%; DRAM 25.0% of peak; SM 15.0% of peak; "
        "40 registers/thread (10240 per block of 256); 1024 B shared/block; 4.0 us total; "
        "top stalls long_scoreboard 10.0, lg_throttle 4.0, wait 1.0"
    )
    (ref,) = summarise(parse_ncu_profile((NCU / "sample_reference.csv").read_text()))
    assert kernel_line(ref).startswith("scale_kernel (1 launch): occupancy 87.5%; DRAM 91.0% of peak")


def test_ncu_command_names_every_metric_and_the_log_file() -> None:
    cmd = ncu_command("./test.out", "/tmp/x.csv")
    assert cmd.startswith(
        "ncu --csv --print-units base --metrics sm__warps_active.avg.pct_of_peak_sustained_active,"
    )
    assert "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio" in cmd
    assert "--log-file /tmp/x.csv /bin/bash -c ./test.out" in cmd


def _recorded_with_profile() -> RecordedToolchain:
    """The vec_scale recordings with a profile recorded for the wrong-result candidate (sample CSVs)."""
    recs = load_recordings(RECORDINGS)
    tc = RecordedToolchain(recs)
    key = next(k for k, out in recs.items() if out[-1].category == "functional_correctness")
    cand, ref = (NCU / "sample_candidate.csv").read_text(), (NCU / "sample_reference.csv").read_text()
    prof = Profiled(
        iteration=1,
        candidate=metrics_of(cand),
        reference=metrics_of(ref),
        result=StageResult(stage="benchmark", command="ncu ...", rc=0),
        raw=cand,
        reference_raw=ref,
    )
    outcome = recs[key]
    tc.recordings[key] = (*outcome[:-1], prof, outcome[-1])
    return tc


def test_l4_feedback_shows_the_candidates_kernels_beside_the_references() -> None:
    events = list(
        run_session(
            vec_scale_task(), ScriptedModel([reply("wrong"), reply("naive")]), _recorded_with_profile(),
            Protocol(feedback="L4"),
        )
    )  # fmt: skip
    note = [e for e in events if isinstance(e, Request)][1].messages[-1].content
    assert "Profiler metrics (ncu), your kernels beside the reference's:" in note
    assert "- scale_kernel (2 launches): occupancy 45.0%; DRAM 25.0% of peak" in note
    assert "The reference's kernels:\n- scale_kernel (1 launch): occupancy 87.5%" in note
    # L3 over the same recording sends no profile, and the recorded event is not replayed
    events = list(
        run_session(
            vec_scale_task(), ScriptedModel([reply("wrong"), reply("naive")]), _recorded_with_profile(),
            Protocol(feedback="L3"),
        )
    )  # fmt: skip
    assert not any(isinstance(e, Profiled) for e in events)
    assert "Profiler" not in [e for e in events if isinstance(e, Request)][1].messages[-1].content


def test_l4_says_when_an_attempt_has_no_profile() -> None:
    tc = RecordedToolchain.load(RECORDINGS)
    events = list(
        run_session(
            vec_scale_task(), ScriptedModel([reply("syntax"), reply("naive")]), tc, Protocol(feedback="L4")
        )
    )
    note = [e for e in events if isinstance(e, Request)][1].messages[-1].content
    assert "Profiler (ncu): it did not run, so it was not profiled." in note


def test_l4_is_refused_where_ncu_cannot_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no ncu on PATH
    with pytest.raises(BeaverError, match=r"feedback L4 needs the ncu profiler, and ncu .* is not on PATH"):
        next(
            iter(
                run_session(
                    vec_scale_task(),
                    ScriptedModel([reply("naive")]),
                    LocalToolchain(),
                    Protocol(feedback="L4"),
                )
            )
        )
    assert LocalToolchain().profiler_unavailable() == "ncu (Nsight Compute) is not on PATH"
    # the same toolchain at L3 is not refused: the session starts
    first = next(
        iter(run_session(vec_scale_task(), ScriptedModel([reply("naive")]), LocalToolchain(), Protocol()))
    )
    assert first.kind == "header"


def test_recorded_h200_l4_session() -> None:
    """The real H200 recording (scripts/gpu-l4.sh): every profiled attempt's stored summary is what the
    parser makes of its stored raw CSV, and its next request shows the profile."""
    session = L4_RECORDING / "session.jsonl"
    if not session.is_file():
        pytest.skip(
            "no H200 L4 recording yet: run scripts/gpu-l4.sh on an H200 and copy its output to tests/data/l4"
        )
    header, events, problem = read_session(session)
    assert problem is None and header is not None and header.protocol.feedback == "L4"
    profiles = [e for e in events if isinstance(e, Profiled)]
    assert profiles, "the recorded session profiled no attempt"
    for p in profiles:
        assert p.candidate == metrics_of(p.raw)
        assert p.reference == metrics_of(p.reference_raw) and p.reference
        nxt = [e for e in events if isinstance(e, Request) and e.iteration == p.iteration + 1]
        if nxt:
            assert "Profiler metrics (ncu)" in nxt[0].messages[-1].content
    raw = sorted(L4_RECORDING.glob("*.ncu.csv"))
    assert raw and all(parse_ncu_profile(f.read_text()) for f in raw)
    json.loads((L4_RECORDING / "summary.json").read_text())


def test_a_batch_with_l4_is_refused_in_one_line_where_ncu_cannot_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from beavertui.cli import main

    monkeypatch.setenv("PATH", str(tmp_path))
    args = ["batch", "--protocol", "legacy-feedback", "--models", "scripted:@reference", "--corpus",
            str(DATA / "recorded"), "--sessions-dir", str(tmp_path / "s"), "--run-id", "x"]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "beavertui: feedback L4 needs the ncu profiler, and ncu (Nsight Compute) is not on PATH; "
        "use L3 or a machine with ncu"
    ]
    assert not (tmp_path / "s" / "x").exists()
    # the recorded toolchain replays recorded profiles: the same file runs
    assert main([*args[:-1], "y", "--toolchain", f"recorded:{RECORDINGS}", "--quiet"]) == 0


def test_the_harness_kernels_are_not_shown_as_the_candidates() -> None:
    """The bundled harness's own kernels (input generation, poison counts) never stand for the candidate."""
    from beavertui.engine.timing.profile import summarise

    launches = [
        (0, "void transpose_harness::fill(float *)", {"gpu__time_duration.sum": 900.0}),
        (1, "void beaver::count_poison_kernel<0>(const unsigned char *)", {"gpu__time_duration.sum": 800.0}),
        (2, "void softmax_task::gen_logits<float>(T1 *)", {"gpu__time_duration.sum": 700.0}),
        (3, "void transpose_tiled<float>(const T1 *, T1 *, int, int)", {"gpu__time_duration.sum": 35.0}),
    ]
    assert [k.name for k in summarise(launches)] == [
        "void transpose_tiled<float>(const T1 *, T1 *, int, int)"
    ]
