"""Analysis screens: start a branch from the step at the cursor, and show a saved attribution run.

The branch dialog asks for the protocol changes of ``beavertui branch`` (feedback level, history window,
temperature, budget, model) and how to judge (recorded outcomes, or this machine's GPU), runs the branch
in a thread worker through the same service as the command (service/branching.py), and hands back the new session's path; the
session screen then shows it next to its parent. The attribution screen reads an ``attribution-*.json``
that ``beavertui attribute`` wrote and shows its Shapley and Banzhaf tables per outcome.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Input, Label, Static

from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import parse_json
from beavertui.engine.session.events import SessionHeader
from beavertui.tui.footer import Footer


def run_branch(parent: Path, step: int, options: dict[str, str], out: Path | None = None) -> Path:
    """Write a branch of ``parent`` at ``step`` (options as on the command line, '' = the parent's)."""
    from beavertui.service.branching import BranchOptions, start_branch

    def text(key: str) -> str | None:
        return options.get(key, "").strip() or None

    def number(key: str, kind: type) -> Any:
        value = text(key)
        if value is None:
            return None
        try:
            return kind(value)
        except ValueError:
            raise BeaverError(f"{key}: not a number: {value!r}") from None

    feedback = text("feedback")
    branch = start_branch(
        parent,
        step,
        BranchOptions(
            feedback=feedback.upper() if feedback else None,
            history=number("history", int),
            temperature=number("temperature", float),
            budget=number("budget", int),
            model=text("model"),
            corpus=text("corpus"),
            recorded=text("recorded"),
        ),
        out,
    )
    for _event in branch.events:
        pass
    return branch.path


class BranchScreen(ModalScreen[Path | None]):
    """Ask for the protocol changes of a branch from ``step``, run it, dismiss with the new file."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, parent: Path, header: SessionHeader, step: int, out_dir: Path | None = None) -> None:
        super().__init__()
        self.parent_path, self.header, self.step = parent, header, step
        self.out_dir = out_dir

    def compose(self) -> ComposeResult:
        p = self.header.protocol
        model = self.header.model.name if self.header.model.kind == "openai" else ""
        with Vertical(id="branch-dialog"):
            yield Label(
                f"Branch {self.parent_path.name} after step {self.step} "
                f"(parent: {p.short()}, {self.header.model.name}); empty = the parent's",
                id="branch-title",
            )
            for key, label, value in (
                ("feedback", "feedback level (L0..L4)", p.feedback),
                ("history", "history window (1-4 rounds)", str(p.history)),
                ("temperature", "temperature", f"{p.temperature:g}"),
                ("budget", "budget K (iterations in all)", str(p.budget)),
                ("model", "model: NAME or scripted:FILE", model),
                ("recorded", "recorded outcomes (file or folder); empty = this machine's GPU", ""),
            ):
                with Horizontal(classes="branch-row"):
                    yield Label(label, classes="branch-label")
                    yield Input(value=value, id=f"branch-{key}", classes="branch-input")
            with Horizontal(classes="branch-row"):
                yield Button("Start branch", id="branch-start", variant="primary")
                yield Static("", id="branch-status")

    def options(self) -> dict[str, str]:
        keys = ("feedback", "history", "temperature", "budget", "model", "recorded")
        return {k: self.query_one(f"#branch-{k}", Input).value for k in keys}

    @on(Button.Pressed, "#branch-start")
    @on(Input.Submitted)
    def start(self) -> None:
        self.query_one("#branch-status", Static).update(Text("running…", style="yellow"))
        self.query_one("#branch-start", Button).disabled = True
        self._run(self.options())

    @work(thread=True, exclusive=True, group="branch")
    def _run(self, options: dict[str, str]) -> None:
        from beavertui.engine.errors import BeaverError

        out = None
        if self.out_dir is not None:
            from uuid import uuid4

            out = self.out_dir / f"{self.header.task.id}-branch-{uuid4().hex[:8]}.jsonl"
        try:
            path = run_branch(self.parent_path, self.step, options, out)
        except BeaverError as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        self.app.call_from_thread(self.dismiss, path)

    def _failed(self, message: str) -> None:
        self.query_one("#branch-status", Static).update(Text(message, style="bold red"))
        self.query_one("#branch-start", Button).disabled = False

    def action_cancel(self) -> None:
        self.dismiss(None)


def attribution_renderable(doc: dict[str, Any], title: str = "") -> RenderableType:
    """The tables of a saved attribution (the ``--json`` object of ``beavertui attribute``)."""
    from beavertui.engine.analysis.attribution import CONTROL_LABELS, control_text, from_json
    from beavertui.engine.analysis.report import attribution_rows

    parts: list[RenderableType] = []
    head = Text()
    if title:
        head.append(title + "\n", style="bold")
    head.append(
        f"{doc.get('branches', '?')} branches, {doc.get('without_verdict', 0)} without a verdict (left out). "
        "Values in units of outcome share (0..1), with bootstrap intervals.",
        style="dim",
    )
    parts.append(head)
    for measure, obj in doc["measures"].items():
        a = from_json(obj)
        table = Table(
            title=f"outcome: {measure} ({a.steps} step(s), {a.samples} branches, {a.confidence:.0%} CI)",
            title_justify="left",
            title_style="bold",
            box=None,
            pad_edge=False,
            header_style="bold",
        )
        table.add_column("component")
        table.add_column("Shapley [low, high]")
        table.add_column("Banzhaf [low, high]")
        for row in attribution_rows(a):
            table.add_row(*row)
        pairs = attribution_rows(a, "pair")
        if pairs:
            table.add_row(
                Text("pair", style="bold"),
                Text("Shapley interaction", style="bold"),
                Text("Banzhaf interaction", style="bold"),
            )
            for row in pairs:
                table.add_row(*row)
        parts.append(table)
        means = ", ".join(
            f"{'+'.join(c for c in a.components if c in s) or 'none'} {v:.2f}"
            for s, v in a.subset_means.items()
        )
        parts.append(Text(f"subset means v(S): {means}", style="dim"))
        controls = (doc.get("controls") or {}).get("values", {}).get(measure, {})
        if controls:
            shown = "; ".join(
                f"{CONTROL_LABELS.get(k, k)} {control_text(k, e['value'], e['low'], e['high'])}"
                for k, e in controls.items()
            )
            parts.append(Text(f"controls (mean outcome): {shown}", style="dim"))
    return Group(*parts)


def load_attribution(path: Path) -> dict[str, Any]:
    from beavertui.engine.errors import BeaverError

    try:
        doc = parse_json(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise BeaverError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BeaverError(f"{path}: not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("measures"), dict):
        raise BeaverError(f"{path}: not an attribution file (no 'measures')")
    try:
        attribution_renderable(doc)
    except (KeyError, TypeError, ValueError, AssertionError) as exc:
        raise BeaverError(f"{path}: damaged attribution file ({type(exc).__name__}: {exc})") from None
    return doc


def attribution_files(session: Path) -> list[Path]:
    """Saved attributions from a frozen step of this session: beside it, and under sessions/attribution."""
    found: set[Path] = set()
    for folder in (session.parent, session.parent / "attribution", Path("sessions") / "attribution"):
        if folder.is_dir():
            found.update(folder.glob(f"attribution-{session.stem}-at*.json"))
    return sorted(found)


class AttributionScreen(Screen[None]):
    """One or more saved attribution runs, one after the other, scrollable."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("question_mark,f1", "help", "Help"),
    ]

    def __init__(self, paths: list[Path]) -> None:
        super().__init__()
        self.paths = paths
        self.docs = [load_attribution(p) for p in paths]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="attribution"):
            for path, doc in zip(self.paths, self.docs, strict=True):
                yield Static(attribution_renderable(doc, str(path)), classes="attribution-run")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#attribution").focus()

    @property
    def text(self) -> str:
        """Everything the screen shows, as plain text (for tests and copying)."""
        import io

        from rich.console import Console

        console = Console(width=200, file=io.StringIO(), color_system=None, record=True)
        for path, doc in zip(self.paths, self.docs, strict=True):
            console.print(attribution_renderable(doc, str(path)))
        return "\n".join(line.rstrip() for line in console.export_text().splitlines())

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.exit(0)

    def action_help(self) -> None:
        from beavertui.tui.help import HelpScreen

        self.app.push_screen(HelpScreen())
