"""Edit precision and bug recall, on small kernels whose values are computed by hand."""

from __future__ import annotations

import pytest

from beavertui.engine.analysis.edits import blocks_of, edit_score, hunks

BROKEN = """\
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        c[i] = a[i] + b[i];
    }
}

void launch(const float* a, const float* b, float* c, int n) {
    add<<<n / 256, 256>>>(a, b, c, n);
}
"""

# The reference fixes the bound (line 2) and the grid size (line 8): two blocks.
REFERENCE = BROKEN.replace("i <= n", "i < n").replace("<<<n / 256,", "<<<(n + 255) / 256,")


def test_reference_edit_has_two_one_line_blocks() -> None:
    blocks = blocks_of(BROKEN, REFERENCE)
    assert [(b.start, b.end, b.size) for b in blocks] == [(2, 3, 1), (8, 9, 1)]


def test_the_reference_itself_scores_one_and_one() -> None:
    s = edit_score(BROKEN, REFERENCE, REFERENCE)
    assert (s.precision, s.recall, s.changed, s.needed) == (1.0, 1.0, 2, 2)
    assert [b.identical for b in s.blocks] == [True, True]


def test_equivalent_fix_counts_as_recovered_but_not_identical() -> None:
    repair = BROKEN.replace("i <= n", "n > i").replace("<<<n / 256,", "<<<(n + 256 - 1) / 256,")
    s = edit_score(BROKEN, repair, REFERENCE)
    assert (s.precision, s.recall) == (1.0, 1.0)
    assert [b.identical for b in s.blocks] == [False, False]


def test_one_block_missed_and_one_unneeded_line() -> None:
    # Fixes the bound, leaves the grid alone, and adds a comment above the kernel (position -0.5, outside
    # block 1's window [0.5, 3.5]): 2 changed lines, 1 needed.
    repair = "// one thread per element\n" + BROKEN.replace("i <= n", "i < n")
    s = edit_score(BROKEN, repair, REFERENCE)
    assert (s.changed, s.needed) == (2, 1)
    assert s.precision == 0.5
    assert s.recall == 0.5
    assert [b.recovered for b in s.blocks] == [True, False]


def test_blank_lines_and_trailing_spaces_are_not_edits() -> None:
    repair = REFERENCE.replace("    }\n}\n", "    }   \n}\n\n\n")
    s = edit_score(BROKEN, repair, REFERENCE)
    assert (s.changed, s.precision, s.recall) == (2, 1.0, 1.0)


def test_tolerance_absorbs_one_extra_line_per_block() -> None:
    # Rewrites lines 1-2 (index + bound) as a grid-stride loop header: 2 changed lines at positions 1 and 2;
    # also fixes the grid. Block 1 has size 1, window [0.5, 3.5] at t=1, capacity 2.
    repair = REFERENCE.replace(
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) {\n",
        "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
        "         i += blockDim.x * gridDim.x) {\n",
    )
    s1 = edit_score(BROKEN, repair, REFERENCE, tolerance=1)
    assert (s1.changed, s1.needed, s1.precision, s1.recall) == (3, 3, 1.0, 1.0)
    # Without tolerance the window is [1.5, 2.5] and holds one line: 2 of 3 lines needed.
    s0 = edit_score(BROKEN, repair, REFERENCE, tolerance=0)
    assert (s0.changed, s0.needed) == (3, 2)
    assert s0.precision == pytest.approx(2 / 3)
    assert s0.recall == 1.0


def test_capacity_limits_a_rewrite_around_a_block() -> None:
    # Rewrites the whole kernel body (5 non-blank lines 0-4 -> 5 different lines) and fixes the grid.
    body = (
        "__global__ void add(const float* __restrict__ a, const float* __restrict__ b, float* c, int n) {\n"
        "    const int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (idx >= n) return;\n"
        "    c[idx] = a[idx] + b[idx];\n"
        "    /* done */\n"
    )
    repair = REFERENCE.replace(REFERENCE[: REFERENCE.index("}\n\nvoid")], body)
    hs = hunks(BROKEN, repair)
    assert sum(h.size for h in hs) == 6  # lines 0-4 modified, line 8 modified
    s = edit_score(BROKEN, repair, REFERENCE)
    # Block 1 window [0.5, 3.5] holds positions 1, 2, 3 but takes only size + t = 2; block 2 takes line 8.
    assert (s.changed, s.needed) == (6, 3)
    assert s.precision == 0.5
    assert s.recall == 1.0


def test_inserted_barrier_one_line_off_is_recovered() -> None:
    broken = "a();\nb();\nc();\nd();\n"
    reference = "a();\nb();\n__syncthreads();\nc();\nd();\n"
    [block] = blocks_of(broken, reference)
    assert (block.start, block.end, block.size) == (2, 2, 1)
    near = "a();\nb();\nc();\n__syncthreads();\nd();\n"
    s = edit_score(broken, near, reference)
    assert (s.precision, s.recall) == (1.0, 1.0)
    far = "a();\nb();\nc();\nd();\n__syncthreads();\n"
    s_far = edit_score(broken, far, reference)
    assert (s_far.precision, s_far.recall) == (0.0, 0.0)


def test_blocks_separated_only_by_blank_lines_merge() -> None:
    broken = "x = 1;\n\ny = 2;\nz = 3;\n"
    reference = "x = 10;\n\ny = 20;\nz = 3;\n"
    blocks = blocks_of(broken, reference)
    assert [(b.start, b.end, b.size) for b in blocks] == [(0, 3, 2)]


def test_degenerate_inputs() -> None:
    s = edit_score(BROKEN, BROKEN, REFERENCE)
    assert (s.precision, s.recall, s.changed) == (None, 0.0, 0)
    s = edit_score(BROKEN, REFERENCE, BROKEN)
    assert s.recall is None
    assert s.precision == 0.0
    with pytest.raises(ValueError):
        edit_score(BROKEN, REFERENCE, REFERENCE, tolerance=-1)
