"""The reference docs render as written and name what exists. Every code fence of README.md and docs/
(the lab journal too) stands on a line of its own, with at most a language word after it, and each file's
fences pair up: a fence that shares its line with prose turns the rest of a section into code. Every
`beavertui ...` command line of README.md and docs/ names a real command and real flags, and every path
and module they name is in the repository."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest

from beavertui.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"\s*```[\w+-]*\s*")


def test_code_fences_stand_alone_and_pair_up() -> None:
    files = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "docs" / "lab").glob("*.md")),
    ]
    assert len(files) > 10
    problems = []
    for path in files:
        fences = 0
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if "```" not in line:
                continue
            if FENCE.fullmatch(line):
                fences += 1
            else:
                problems.append(f"{path.relative_to(ROOT)}:{n}: a fence shares its line: {line.strip()[:60]}")
        if fences % 2:
            problems.append(f"{path.relative_to(ROOT)}: {fences} fences, one left open")
    assert not problems, "\n".join(problems)


REFERENCE = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: a command line: a fenced line that runs beavertui (after a prompt, a variable or a pipe), or inline code
#: that starts with it
FENCED_COMMAND = re.compile(r"(?:^|[\s;&|(])((?:python3? -m )?beavertui(?:\s.*)?)$")
INLINE_COMMAND = re.compile(r"`((?:python3? -m )?beavertui(?: [^`]*)?)`")
#: inline code that names a command without the program, with a flag: `metrics --format json`
SHORT_COMMAND = re.compile(rf"`((?:{'|'.join(COMMANDS)}) (?:[^`-][^`]*)?-[^`]*)`")
#: what ends a command's own words: a pipe, a redirection, a comment, the next command
COMMAND_END = re.compile(r"\s(?:\||&&|;|\d?>|#)(?:\s|$)")


def _command_lines(path: Path) -> list[tuple[int, str]]:
    """Every beavertui command line of a doc, with its line number; a fenced line ending in a backslash
    goes on on the next."""
    found: list[tuple[int, str]] = []
    fenced = False
    pending: list[Any] | None = None
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = line.strip()
        if FENCE.fullmatch(line):
            fenced = not fenced
            continue
        if not fenced:
            found += [(n, m[1]) for m in INLINE_COMMAND.finditer(line)]
            found += [(n, f"beavertui {m[1]}") for m in SHORT_COMMAND.finditer(line)]
            continue
        if pending is not None:
            pending[1] += " " + text.removesuffix("\\")
            if not text.endswith("\\"):
                found.append((pending[0], pending[1]))
                pending = None
            continue
        m = FENCED_COMMAND.search(text)
        if m is None or text.startswith("#"):
            continue
        if text.endswith("\\"):
            pending = [n, m[1].removesuffix("\\")]
        else:
            found.append((n, m[1]))
    return found


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_every_documented_command_line_names_a_real_command_and_real_flags() -> None:
    """Each `beavertui ...` line of README.md and docs/ (fenced or inline) names a subcommand the parser has
    (nested ones too: `corpus minimize`) and only flags that subcommand takes, and so does inline code that
    names a command with a flag but not the program (`metrics --format json`): a renamed or dropped flag
    fails here, not in a reader's shell. Placeholders (FILE, `...`, `[--follow]`) pass as words."""
    from beavertui.cli import build_parser

    top = build_parser()
    checked = 0
    problems = []
    for path in REFERENCE:
        for n, line in _command_lines(path):
            words = COMMAND_END.split(line)[0].replace("[", " ").replace("]", " ").split()
            words = words[words.index("beavertui") + 1 :]
            parser, named = top, ["beavertui"]
            while words and not words[0].startswith("-") and _subcommands(parser):
                choices = _subcommands(parser)
                if words[0] not in choices:
                    if words[0] != "...":
                        problems.append(f"{path.name}:{n}: `{' '.join(named)}` has no command {words[0]!r}")
                    break
                parser = choices[words[0]]
                named.append(words.pop(0))
            flags = {s for action in parser._actions for s in action.option_strings}
            for word in words:
                flag = word.split("=")[0]
                if re.fullmatch(r"--?[a-zA-Z][\w-]*", flag) and flag not in flags:
                    problems.append(f"{path.name}:{n}: `{' '.join(named)}` has no flag {flag}")
            checked += 1
    assert checked > 180  # the extraction still finds the docs' commands
    assert not problems, "\n".join(problems)


#: paths the docs name that are not this repository's: the release's own files, and examples to write
FOREIGN_PATHS = {"docs/REPRODUCE.md"}
#: a path of the repository: under one of its top-level folders
REPO_PATH = re.compile(
    r"(?<![\w./~<-])((?:beavertui|tests|scripts|bench|docs|corpus|assets)/[\w./*<>-]*[\w*>])"
)
#: a module's dotted path: beavertui.engine.x (an attribute after it is allowed)
MODULE_PATH = re.compile(r"(?<![\w./])(beavertui(?:\.[a-z_]\w*)+)")


def _exists(text: str, relative_to: Path) -> bool:
    """Whether a documented path names something here; an upper-case word or <...> is a placeholder, and a
    folder of test data may be stored packed (`NAME.tar.gz`)."""
    pattern = re.sub(r"<[^>]*>|\b[A-Z][A-Z_]+\b", "*", text)
    for base in (ROOT, relative_to):
        if any(base.glob(pattern)) if "*" in pattern else (base / pattern).exists():
            return True
        if (base / f"{pattern}.tar.gz").exists():
            return True
    return False


def _module_exists(dotted: str) -> bool:
    """Whether ``beavertui.a.b[.name]`` is a module or package here, or a name its longest such prefix
    defines."""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        where = ROOT / Path(*parts[:k])
        source = where / "__init__.py" if where.is_dir() else where.with_suffix(".py")
        if source.exists():
            rest = parts[k:]
            return not rest or (
                len(rest) == 1 and re.search(rf"\b{rest[0]}\b", source.read_text()) is not None
            )
    return False


def test_every_path_and_module_the_docs_name_exists() -> None:
    """A file, folder, script or test a reference doc names (`beavertui/...`, `tests/...`, `scripts/...`,
    `bench/...`, `docs/...`, `corpus/...`) and each module it names in dotted form (`beavertui.engine.x`)
    is in the repository: a doc that still names a moved or deleted module fails here."""
    problems = []
    for path in REFERENCE:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in REPO_PATH.finditer(line):
                text = m[1].rstrip(".")
                if text not in FOREIGN_PATHS and not _exists(text, path.parent):
                    problems.append(f"{path.name}:{n}: no {text}")
            for m in MODULE_PATH.finditer(line):
                if not _module_exists(m[1]):
                    problems.append(f"{path.name}:{n}: no module {m[1]}")
    assert not problems, "\n".join(problems)


def _format_rows() -> dict[str, str]:
    """docs/format.md's table of session lines: kind -> its row."""
    text = (ROOT / "docs" / "format.md").read_text(encoding="utf-8")
    section = text.split("## Session files", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| (`\w+`(?:, `\w+`)*) \|", line)
        if m:
            rows.update(dict.fromkeys(re.findall(r"\w+", m[1]), line))
    return rows


def test_every_field_a_session_line_can_carry_is_in_its_row_of_format_md() -> None:
    """Each kind of line a session file holds has its row in docs/format.md's table, and the row names every
    field of that kind's event (beyond `kind`, `t` and `iteration`, which the text above the table gives) and
    of the objects it nests (a stage's result, a timing, a sanitizer record, a flag, a kernel, the usage):
    a field added to an event without a word in the format's reference fails here."""
    from pydantic import BaseModel

    from beavertui.engine.session import events

    rows = _format_rows()
    problems = []
    kinds = 0
    for cls in vars(events).values():
        if not (isinstance(cls, type) and issubclass(cls, BaseModel) and "kind" in cls.model_fields):
            continue
        kind = cls.model_fields["kind"].default
        if not isinstance(kind, str) or kind == "reply_delta":  # streamed fragments are never written
            continue
        kinds += 1
        if kind not in rows:
            problems.append(f"no row for the `{kind}` line ({cls.__name__})")
            continue
        named = set(re.findall(r"`(\w+)`", rows[kind]))
        missing = [f for f in cls.model_fields if f not in {"kind", "t", "iteration"} and f not in named]
        if missing:
            problems.append(f"`{kind}` ({cls.__name__}): {', '.join(missing)} not in its row")
    assert kinds >= 15
    from beavertui.engine.session import facts

    for what, kind in (
        (facts.StageResult, "build"),
        (facts.SanitizerRecord, "sanitize"),
        (facts.TimingResult, "timing"),
        (facts.Flag, "verdict"),
        (facts.KernelMetrics, "profile"),
        (events.Usage, "end"),
    ):  # the objects a line nests, in the row of the line that holds them
        named = set(re.findall(r"`(\w+)`", rows[kind]))
        missing = [f for f in what.model_fields if f not in named]
        if missing:
            problems.append(f"`{kind}`'s {what.__name__}: {', '.join(missing)} not in its row")
    assert not problems, "\n".join(problems)


def test_architecture_names_every_module_of_the_package() -> None:
    """docs/architecture.md names each module of the layers it describes (a file name in a code span), so a
    module added without a word on where it stands fails here. A command module is named by its command
    (`commands/<name>.py`, listed in cli.py), a top-level module of the engine by its floor."""
    from beavertui.cli import COMMANDS

    spans = [
        span
        for line in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines()
        for span in re.findall(r"`([^`]+)`", line)
    ]
    named = {word.rsplit("/", 1)[-1] for span in spans for word in re.findall(r"[\w/]+\.py", span)}
    floors = set(spans)  # the engine's top-level modules are named by their floor (`errors`, `fileio`...)
    package = ROOT / "beavertui"
    missing = [
        path.relative_to(package).as_posix()
        for layer in ("engine", "batch", "reports", "service", "commands", "tui")
        for path in sorted((package / layer).rglob("*.py"))
        if path.name != "__init__.py"
        and path.name not in named
        and not (layer == "commands" and path.stem in COMMANDS)
        and not (path.parent == package / "engine" and path.stem in floors)
    ]
    assert len(named) > 100
    assert not missing, "modules docs/architecture.md does not name:\n" + "\n".join(missing)


#: words of a campaign log, not of a reference: who did what when belongs in docs/lab/
NARRATION = re.compile(
    r"\b(?:today|yesterday|tonight|this morning|we|our)\b|\(\w+ session\)|\bthis session's run\b",
    re.IGNORECASE,
)


def test_reference_docs_do_not_narrate_sessions() -> None:
    """README.md and docs/*.md say what is true now; a dated campaign ("today we measured", "the sixth
    session") is written in docs/lab/, and a reference links to it."""
    problems = [
        f"{path.name}:{n}: {m[0]!r}: {line.strip()[:80]}"
        for path in REFERENCE
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for m in NARRATION.finditer(line)
    ]
    assert not problems, "\n".join(problems)


#: a script of the repository with the words after it: `python3 bench/tui_bench.py --sessions 10000`
SCRIPT_LINE = re.compile(
    r"(?<![\w/])((?:bench|scripts)/[\w.-]+\.(?:py|sh))((?:\s+(?:[\w$/.=<>\[\]:,-]+|'[^']*'))*)"
)


def test_the_flags_the_docs_give_a_script_are_the_scripts() -> None:
    """Each flag a doc passes to a script of bench/ or scripts/ (`bench/tui_bench.py --sessions 10000`) is
    one its source spells: a flag renamed in the script but not in the doc fails here."""
    problems = []
    for path in REFERENCE:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in SCRIPT_LINE.finditer(line):
                script = ROOT / m[1]
                if not script.is_file():
                    problems.append(f"{path.name}:{n}: no {m[1]}")
                    continue
                source = script.read_text(encoding="utf-8")
                problems += [
                    f"{path.name}:{n}: {m[1]} has no {flag}"
                    for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", m[2])
                    if flag not in source
                ]
    assert not problems, "\n".join(problems)


def test_every_environment_variable_the_package_reads_is_documented() -> None:
    """A `BEAVERTUI_*` variable the package reads is named in README.md or docs/ (architecture.md's table of
    settings from the environment says where it is read), and each one the docs name outside the test
    suite's own is read somewhere."""
    package = {
        name
        for path in (ROOT / "beavertui").rglob("*.py")
        for name in re.findall(r"BEAVERTUI_[A-Z_]+", path.read_text(encoding="utf-8"))
    }
    docs = {
        name
        for path in REFERENCE
        for name in re.findall(r"BEAVERTUI_[A-Z_]+", path.read_text(encoding="utf-8"))
    }
    tests = {
        name
        for path in (ROOT / "tests").rglob("*.py")
        for name in re.findall(r"BEAVERTUI_[A-Z_]+", path.read_text(encoding="utf-8"))
    }
    assert package, "the scan still finds the variables"
    assert not package - docs, f"read but not documented: {sorted(package - docs)}"
    assert not docs - package - tests, f"documented but read nowhere: {sorted(docs - package - tests)}"


def test_the_indexes_list_every_doc_and_every_campaign() -> None:
    """docs/README.md links every reference page of docs/, docs/lab/README.md every campaign file, and each
    folder of raw data in docs/data/ is named by a doc: a page added without its line in the index fails."""
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    lab = (ROOT / "docs" / "lab" / "README.md").read_text(encoding="utf-8")
    unindexed = [
        p.name
        for p in sorted((ROOT / "docs").glob("*.md"))
        if p.name != "README.md" and f"]({p.name}" not in index
    ]
    unlisted = [
        p.name
        for p in sorted((ROOT / "docs" / "lab").glob("*.md"))
        if p.name != "README.md" and f"]({p.name})" not in lab
    ]
    docs = "".join(
        p.read_text(encoding="utf-8") for p in [*REFERENCE, *sorted((ROOT / "docs" / "lab").glob("*.md"))]
    )
    unnamed = [
        p.name
        for p in sorted((ROOT / "docs" / "data").iterdir())
        if p.is_dir() and f"data/{p.name}" not in docs
    ]
    assert not unindexed, f"not in docs/README.md: {unindexed}"
    assert not unlisted, f"not in docs/lab/README.md: {unlisted}"
    assert not unnamed, f"docs/data folders no doc names: {unnamed}"


def test_every_field_of_a_models_file_and_a_protocol_files_models_is_in_the_readme() -> None:
    """README.md's "A models file" names every key a `[models.NAME]` table takes (engine/models/openai_model.py
    `OpenAIConfig`) and "A protocol file's `[[models]]`" every key of `batch/protocol_file.py`'s `ModelSpec`,
    and the paragraphs after it every top-level key of a protocol file (`BatchFile`); the protocol object of
    docs/format.md every field of `Protocol`. A key the readers take without a word
    in the docs fails here."""
    from beavertui.batch.protocol_file import BatchFile, ModelSpec
    from beavertui.engine.models.openai_model import OpenAIConfig
    from beavertui.engine.session.protocol import Protocol

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    models_file = readme.split("**A models file**", 1)[1].split("**A protocol file's `[[models]]`**", 1)[0]
    models_list = readme.split("**A protocol file's `[[models]]`**", 1)[1].split("```", 1)[0]
    protocol_file = readme.split("**A protocol file's `[[models]]`**", 1)[1].split(
        "**The CUDABeaver release's", 1
    )[0]
    fmt = (ROOT / "docs" / "format.md").read_text(encoding="utf-8")
    protocol = fmt.split("### The protocol object in the header", 1)[1].split("\n## ", 1)[0]

    def named(text: str) -> set[str]:
        return set(re.findall(r"`\[{0,2}(\w+)\]{0,2}`", text)) | set(
            re.findall(r"^(\w+) =", text, re.MULTILINE)
        )

    missing = [
        f"{where}: {field}"
        for where, model, text in (
            ("models file", OpenAIConfig, models_file),
            ("[[models]]", ModelSpec, models_list),
            ("protocol object", Protocol, protocol),
            ("protocol file", BatchFile, protocol_file),
        )
        for field in model.model_fields
        if field not in named(text)
    ]
    assert not missing, "\n".join(missing)


def test_every_key_of_browse_json_is_in_the_readme(capsys: pytest.CaptureFixture[str]) -> None:
    """`browse --format json` on the bundled demo sessions writes only keys the README's paragraph on it
    names."""
    import json

    from beavertui.cli import main

    assert main(["browse", str(ROOT / "sessions" / "demo"), "--format", "json"]) == 0
    keys = {key for line in capsys.readouterr().out.splitlines() for key in json.loads(line)}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = readme.split("`browse --format json` prints", 1)[1].split("\n\n", 1)[0]
    missing = sorted(keys - set(re.findall(r"`(\w+)`", paragraph)))
    assert len(keys) > 10 and not missing, missing


def test_every_key_of_batch_json_is_in_the_readme(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`batch --dry-run --json` (the plan) and `batch --json` (the summary at its end), on the bundled
    demos, write only keys the README's "A batch as JSON" names."""
    import json

    from beavertui.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))  # no cache of the user's is read or written
    assert main(["batch", "--demo", "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert main(["batch", "--demo", "--json", "--run-id", "docs"]) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    keys = {*plan, *plan["sessions"][0], *summary, *summary["groups"][0]}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = readme.split("**A batch as JSON.**", 1)[1].split("\n\n", 1)[0]
    missing = sorted(keys - set(re.findall(r"`(\w+)`", paragraph)))
    assert not missing, missing


def test_every_key_of_corpus_validate_json_is_in_the_readme() -> None:
    """`corpus validate --json` writes a task's validation (engine/validation/validate.py `TaskValidation`,
    every field) with `valid`, `verdict`, `verdict_reason` and `observed_category` (commands/corpus.py);
    the README's paragraph on it names each."""
    import dataclasses

    from beavertui.engine.validation.validate import TaskValidation

    source = (ROOT / "beavertui" / "commands" / "corpus.py").read_text(encoding="utf-8")
    start = source.index("{**asdict(r),")  # the object it prints: the fields, then the keys it adds
    added = re.findall(r'"(\w+)": ', source[start : source.index("flush=True", start)])
    assert {"valid", "verdict", "verdict_reason", "observed_category"} <= set(added)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = readme.split("`corpus validate --json` prints", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"`(\w+)`", paragraph))
    keys = [f.name for f in dataclasses.fields(TaskValidation)] + added
    assert not [k for k in keys if k not in named], [k for k in keys if k not in named]
