"""The t quantiles the timing and the metrics read from a table are scipy's own, to the last bit."""

from __future__ import annotations

import pytest

from beavertui.engine.timing import adaptive


@pytest.mark.parametrize("k", range(1, len(adaptive.T975_TABLE) + 1))
def test_each_tabled_quantile_is_scipys(k: int) -> None:
    from scipy.special import stdtrit  # here, not at collection, which every worker does

    assert adaptive.t975(k) == float(stdtrit(k, 0.975))
    assert adaptive.t975(k + 0.99) == adaptive.t975(k)  # rounded down, as Welch's degrees of freedom are


def test_beyond_the_table_scipy_answers() -> None:
    from scipy.special import stdtrit

    k = len(adaptive.T975_TABLE) + 1
    assert adaptive.t975(k) == float(stdtrit(k, 0.975)) < adaptive.T975_TABLE[-1]
