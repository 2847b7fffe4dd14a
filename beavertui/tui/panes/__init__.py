"""The session screen's panes, one module per pane. Each renders a View; none holds session state."""

from beavertui.tui.panes.analysis import AnalysisPane
from beavertui.tui.panes.base import Pane
from beavertui.tui.panes.diff import DiffPane
from beavertui.tui.panes.header import HeaderBar
from beavertui.tui.panes.log import LogPane
from beavertui.tui.panes.sanitizer import SanitizerPane
from beavertui.tui.panes.speedup import SpeedupPane
from beavertui.tui.panes.stagnation import StagnationPane
from beavertui.tui.panes.timeline import Timeline

__all__ = [
    "AnalysisPane",
    "DiffPane",
    "HeaderBar",
    "LogPane",
    "Pane",
    "SanitizerPane",
    "SpeedupPane",
    "StagnationPane",
    "Timeline",
]
