"""Code extraction from model replies."""

from __future__ import annotations

from beavertui.engine.code.extract import extract, strip_think


def test_last_block_in_the_language_wins() -> None:
    reply = "First try:\n```cuda\nint a;\n```\nBetter:\n```cuda\nint b;\n```\nRun with:\n```bash\nmake\n```\n"
    assert extract(reply, "cuda").code == "int b;\n"
    assert extract(reply, "cuda").blocks == 3


def test_untagged_block_is_accepted_and_other_languages_are_not() -> None:
    assert extract("```\n__global__ void k() {}\n```", "cuda").code == "__global__ void k() {}\n"
    result = extract("```python\nprint(1)\n```", "cuda")
    assert result.code is None
    assert result.reason == "no cuda code block (found: python)"


def test_python_solution() -> None:
    reply = "```cuda\nint x;\n```\n```python\nimport torch\n```"
    assert extract(reply, "python").code == "import torch\n"


def test_think_sections_are_stripped() -> None:
    reply = "<think>maybe\n```cuda\nint wrong;\n```\n</think>\nHere:\n```cuda\nint right;\n```"
    assert extract(reply, "cuda").code == "int right;\n"
    # Only thinking: no code, even though the thinking held a block.
    only = extract("<think>\n```cuda\nint draft;\n```\n", "cuda")
    assert only.code is None
    assert only.reason == "the reply holds only reasoning (<think>) and no answer"
    # The template opened <think> in the prompt: the reply starts mid-thought.
    assert strip_think("draft ```x``` </think>answer") == "answer"


def test_reasons_when_no_code() -> None:
    assert extract("", "cuda").reason == "empty reply"
    assert extract("I cannot fix this.", "cuda").reason == "no fenced code block in the reply"
    assert extract("```cuda\nint x;\n", "cuda").reason == "the last code block is not closed (reply cut off?)"
    assert extract("```cuda\n```", "cuda").reason == "the code block is empty"


def test_longer_fences_and_tildes() -> None:
    reply = "````cuda\n```inner```\nint z;\n````\n"
    assert extract(reply, "cuda").code == "```inner```\nint z;\n"
    assert extract("~~~cu\nint t;\n~~~", "cuda").code == "int t;\n"
