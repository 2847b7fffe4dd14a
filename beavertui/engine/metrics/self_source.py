"""Whether the model under test is the one that wrote a task's broken start (the self-source flag,
docs/metrics.md). Plain string work, apart from the numpy of the metrics, so a batch that sets the flag on
its sessions loads none of it.
"""

from __future__ import annotations


def source_model_matches(model: str, source: str | None) -> bool:
    """Whether a task's source model is the model under test (exact, or the same name after the last '/')."""
    if not source:
        return False
    if model == source:
        return True
    return model.rsplit("/", 1)[-1].lower() == source.rsplit("/", 1)[-1].lower()
