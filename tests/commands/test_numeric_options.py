"""Every numeric option of every command is read by a bounded type, and a bad value is one line, exit 2.

Before, ranges were checked case by case after parsing, and options added since were not: ``corpus
minimize --gate nan`` and ``--gate 1e9``, ``corpus baselines --trials 0``, ``--warm-s -5``, ``--budget-s
nan``, ``attribute --samples 0``, ``live --seed -1``, ``branch --history 0``, ``--top-p 7`` and others
were taken, or refused only later, by whatever read them.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from beavertui.cli import build_parser, main
from beavertui.commands.numbers import Bounded, GpuList, float_in, int_in
from beavertui.engine.limits import MAX_GATE, MAX_TEMPERATURE
from beavertui.engine.models.openai_model import OpenAIConfig
from beavertui.engine.session.protocol import Protocol

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "sessions" / "demo"
SESSION = str(DEMO / "code_cycle.jsonl")
#: Metavars that say an option takes a number.
NUMERIC_METAVARS = {"N", "S", "K", "P", "T", "H", "B", "STEP", "SECONDS"}


def options(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.Action]]:
    """Every option and positional of ``parser`` and of its subcommands, with the command's name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield from options(sub, (*path, name))
        else:
            yield " ".join(path), action


def unbounded_numbers(parser: argparse.ArgumentParser) -> list[str]:
    """Options whose values are numbers (a numeric type, default or metavar) read without a bounded type
    or choices."""
    out = []
    for command, a in options(parser):
        if a.nargs == 0:
            continue  # flags, --help, --version
        numeric = (
            a.type in (int, float)
            or (isinstance(a.default, int | float) and not isinstance(a.default, bool))
            or a.metavar in NUMERIC_METAVARS
        )
        if numeric and not isinstance(a.type, Bounded | GpuList) and a.choices is None:
            out.append(f"{command} {'/'.join(a.option_strings) or a.dest}")
    return out


def test_every_numeric_option_of_every_command_has_a_bounded_type() -> None:
    parser = build_parser()
    walked = {command for command, _ in options(parser)}
    assert {
        "batch",
        "live",
        "metrics",
        "corpus minimize",
        "corpus baselines",
        "attribute",
        "branch",
    } <= walked
    assert unbounded_numbers(parser) == []


def test_the_walk_finds_an_option_that_skips_the_bounds() -> None:
    parser = build_parser()
    commands = {c: a.container for c, a in options(parser)}  # each command's parser, through an action of it
    commands["batch"].add_argument("--new-count", type=int)
    commands["corpus list"].add_argument("--limit", default=10)
    commands["live"].add_argument("--wait", metavar="S")
    assert sorted(unbounded_numbers(parser)) == ["batch --new-count", "corpus list --limit", "live --wait"]


def test_protocol_and_endpoint_ranges_are_the_models_own() -> None:
    """The command line's ranges are the ones the models reading protocol and models files hold."""
    parser = build_parser()
    live = {a.dest: a.type for _, a in options(parser) if _ == "live"}
    for flag, model, field in (
        ("budget", Protocol, "budget"),
        ("history", Protocol, "history"),
        ("temperature", Protocol, "temperature"),
        ("gate", Protocol, "gate"),
        ("top_p", OpenAIConfig, "top_p"),
        ("max_tokens", OpenAIConfig, "max_tokens"),
        ("timeout", OpenAIConfig, "timeout_s"),
        ("retries", OpenAIConfig, "retries"),
    ):
        bounded = live[flag]
        assert isinstance(bounded, Bounded), flag
        meta = {type(m).__name__: m for m in model.model_fields[field].metadata}
        lo = meta["Gt"].gt if "Gt" in meta else meta["Ge"].ge
        assert (bounded.lo, bounded.hi, bounded.above) == (lo, meta["Le"].le, "Gt" in meta), flag


@pytest.mark.parametrize(
    ("text", "ok"),
    [("0", True), ("3", True), ("1.5", True), ("3.0000001", False), ("-0.1", False), ("nan", False),
     ("inf", False), ("-inf", False), ("1e400", False), ("x", False), ("", False)],
)  # fmt: skip
def test_float_in_takes_only_finite_numbers_in_range(text: str, ok: bool) -> None:
    gate = float_in(0, MAX_GATE)
    if ok:
        assert gate(text) == float(text)
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=f"^must be 0 to 3, not {text}$"):
            gate(text)


def test_int_in_and_the_refusal_text() -> None:
    samples = int_in(1, 1000)
    assert samples("1000") == 1000 and isinstance(samples("7"), int)
    for bad in ("0", "1001", "2.5", "1e3", "nan", "10" * 400):
        with pytest.raises(argparse.ArgumentTypeError, match=r"^must be 1 to 1,000, not "):
            samples(bad)
    with pytest.raises(argparse.ArgumentTypeError) as exc:
        samples("\x1b]0;title\x07")
    assert str(exc.value) == r"must be 1 to 1,000, not '\x1b]0;title\x07'"
    with pytest.raises(argparse.ArgumentTypeError) as exc:
        samples("9" * 50)
    assert str(exc.value) == f"must be 1 to 1,000, not '{'9' * 40}'..."
    assert float_in(0, 86_400, above=True, unit="seconds").text() == "above 0 and at most 86,400 seconds"
    assert float_in(0, MAX_TEMPERATURE).text() == "0 to 2"


BASELINES = ("corpus", "baselines")
MINIMIZE = ("corpus", "minimize")
ATTRIBUTE = ("attribute", SESSION)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("batch", "--samples", "0"), "--samples must be 1 to 1,000, not 0"),
        (("batch", "--jobs", "-1"), "--jobs must be 1 to 100,000, not -1"),
        (("batch", "--gpu-share", "2000"), "--gpu-share must be 1 to 1,024, not 2000"),
        (("batch", "--start-until", "nan"), "--start-until must be 0 to 2,592,000 seconds, not nan"),
        (
            ("batch", "--gpus", "0,one"),
            "--gpus must be GPU indices 0 to 1,023 or UUIDs, comma-separated, not 0,one",
        ),
        (("batch", "--top-p", "7"), "--top-p must be above 0 and at most 1, not 7"),
        (("batch", "--max-tokens", "0"), "--max-tokens must be 1 to 10,000,000, not 0"),
        (("batch", "--timeout", "-1"), "--timeout must be above 0 and at most 86,400 seconds, not -1"),
        (("batch", "--retries", "-1"), "--retries must be 0 to 100, not -1"),
        (("live", "--budget", "0"), "--budget/-k must be 1 to 100, not 0"),
        (("live", "-k", "101"), "--budget/-k must be 1 to 100, not 101"),
        (("live", "--temperature", "99"), "--temperature must be 0 to 2, not 99"),
        (("live", "--seed", "-1"), "--seed must be 0 to 4,294,967,295, not -1"),
        (("live", "--gate", "inf"), "--gate must be 0 to 3, not inf"),
        (("live", "--history", "9"), "--history must be 1 to 4, not 9"),
        (("branch", SESSION, "--at", "0"), "--at must be 1 to 100, not 0"),
        (("branch", SESSION, "--history", "0"), "--history must be 1 to 4, not 0"),
        (("branch", SESSION, "--budget", "101"), "--budget must be 1 to 100, not 101"),
        (("branch", SESSION, "--temperature", "nan"), "--temperature must be 0 to 2, not nan"),
        ((*ATTRIBUTE, "--samples", "0"), "--samples must be 1 to 1,000, not 0"),
        ((*ATTRIBUTE, "--horizon", "0"), "--horizon must be 1 to 99, not 0"),
        ((*ATTRIBUTE, "--resamples", "10"), "--resamples must be 1,000 to 100,000, not 10"),
        ((*ATTRIBUTE, "--donor-seed", "-1"), "--donor-seed must be 0 to 4,294,967,295, not -1"),
        (("metrics", str(DEMO), "--gate", "1e9"), "--gate must be 0 to 3, not 1e9"),
        (
            ("metrics", str(DEMO), "--resamples", "100000000"),
            "--resamples must be 1,000 to 100,000, not 100000000",
        ),
        ((*MINIMIZE, "--gate", "nan"), "--gate must be above 0 and at most 3, not nan"),
        ((*MINIMIZE, "--gate", "1e9"), "--gate must be above 0 and at most 3, not 1e9"),
        ((*MINIMIZE, "--gate", "0"), "--gate must be above 0 and at most 3, not 0"),
        ((*MINIMIZE, "--max-calls", "0"), "--max-calls must be 1 to 100,000, not 0"),
        ((*MINIMIZE, "--budget-s", "-1"), "--budget-s must be 0 to 2,592,000 seconds, not -1"),
        ((*MINIMIZE, "--gpu", "0,1"), "--gpu must be a GPU index 0 to 1,023 or its UUID, not 0,1"),
        ((*BASELINES, "--trials", "0"), "--trials must be 1 to 10,000, not 0"),
        ((*BASELINES, "--warmup", "-1"), "--warmup must be 0 to 10,000, not -1"),
        ((*BASELINES, "--warm-s", "-5"), "--warm-s must be above 0 and at most 86,400 seconds, not -5"),
        ((*BASELINES, "--budget-s", "nan"), "--budget-s must be 0 to 2,592,000 seconds, not nan"),
        ((*BASELINES, "--jobs", "0"), "--jobs must be 1 to 1,024, not 0"),
        (("corpus", "validate", "--workers", "0"), "--workers must be 1 to 1,024, not 0"),
        (("corpus", "validate", "--gpu-jobs", "-2"), "--gpu-jobs must be 1 to 1,024, not -2"),
        (("check", "vec_scale", "--gate", "-1"), "--gate must be 0 to 3, not -1"),
        (("reproduce", "--jobs", "0"), "--jobs must be 1 to 100,000, not 0"),
    ],
    ids=lambda v: " ".join(x for x in v if not x.startswith("/")) if isinstance(v, tuple) else "",
)
def test_a_bad_number_is_refused_in_one_line_before_anything_runs(
    argv: tuple[str, ...], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(list(argv)) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [f"beavertui: {says}"]


def test_other_refused_command_lines_are_one_line_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["batch", "--samples"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "beavertui: --samples: expected one argument (beavertui batch --help lists the options)"
    ]
    assert main(["live", "--feedback", "L9\x1b[2J"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("beavertui: --feedback: invalid choice: 'L9\\x1b[2J'") and "\x1b" not in line
    # an argument no option takes (two session files to an export of one) points at that command's help
    assert main(["export", "a.jsonl", "b.jsonl", "--html", "-o", "x.html"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "beavertui: unrecognized arguments: b.jsonl (beavertui export --help lists the options)"
    ]
    assert main(["--bogus"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "beavertui: unrecognized arguments: --bogus (beavertui --help lists the options)"
    ]
    assert main(["--version"]) == 0
