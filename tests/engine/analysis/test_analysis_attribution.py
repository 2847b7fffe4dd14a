"""Shapley, Banzhaf and interaction indices on small games whose values are known in closed form."""

from __future__ import annotations

import pytest

from beavertui.engine.analysis.attribution import AttributionError, attribute, subsets, to_json

C3 = ("compiler", "sanitizer", "timing")


def game(components: tuple[str, ...], value, samples: int = 1) -> dict[frozenset[str], list[float]]:  # type: ignore[no-untyped-def]
    return {s: [value(s)] * samples for s in subsets(components)}


def test_additive_game_gives_the_weights_and_no_interaction() -> None:
    w = {"compiler": 0.5, "sanitizer": 0.2, "timing": 0.1}
    a = attribute(C3, [game(C3, lambda s: sum(w[c] for c in s))], resamples=50)
    for c in C3:
        assert a.shapley[c].value == pytest.approx(w[c])
        assert a.banzhaf[c].value == pytest.approx(w[c])
    for e in (*a.shapley_interaction.values(), *a.banzhaf_interaction.values()):
        assert e.value == pytest.approx(0.0, abs=1e-12)


def test_unanimity_game_of_two_among_three() -> None:
    # v(S) = 1 iff compiler and sanitizer are both in S.
    a = attribute(C3, [game(C3, lambda s: float({"compiler", "sanitizer"} <= s))], resamples=50)
    assert a.shapley["compiler"].value == pytest.approx(0.5)
    assert a.shapley["sanitizer"].value == pytest.approx(0.5)
    assert a.shapley["timing"].value == pytest.approx(0.0)
    assert a.banzhaf["compiler"].value == pytest.approx(0.5)  # 1 / 2^(|T|-1)
    assert a.shapley_interaction[("compiler", "sanitizer")].value == pytest.approx(1.0)  # 1 / (|T|-1)
    assert a.banzhaf_interaction[("compiler", "sanitizer")].value == pytest.approx(1.0)  # 1 / 2^(|T|-2)
    assert a.shapley_interaction[("compiler", "timing")].value == pytest.approx(0.0)


def test_unanimity_game_of_all_three() -> None:
    a = attribute(C3, [game(C3, lambda s: float(len(s) == 3))], resamples=50)
    for c in C3:
        assert a.shapley[c].value == pytest.approx(1 / 3)
        assert a.banzhaf[c].value == pytest.approx(1 / 4)
    assert a.shapley_interaction[("sanitizer", "timing")].value == pytest.approx(1 / 2)
    assert a.banzhaf_interaction[("sanitizer", "timing")].value == pytest.approx(1 / 2)


def test_shapley_is_efficient_and_banzhaf_differs_on_a_majority_game() -> None:
    # v(S) = 1 iff |S| >= 2 (a symmetric majority game): Shapley 1/3 each, Banzhaf 1/2 each.
    a = attribute(C3, [game(C3, lambda s: float(len(s) >= 2))], resamples=50)
    assert sum(e.value for e in a.shapley.values()) == pytest.approx(1.0)
    assert [a.banzhaf[c].value for c in C3] == pytest.approx([0.5, 0.5, 0.5])


def test_deterministic_outcomes_have_zero_width_intervals() -> None:
    a = attribute(C3, [game(C3, lambda s: float("compiler" in s), samples=4)], resamples=200)
    e = a.shapley["compiler"]
    assert (e.value, e.low, e.high) == (1.0, 1.0, 1.0)


def test_noisy_samples_give_intervals_around_the_point_value() -> None:
    # compiler lifts success from 1/4 to 3/4 of 4 samples; the others do nothing.
    g = {s: ([1.0, 1.0, 1.0, 0.0] if "compiler" in s else [1.0, 0.0, 0.0, 0.0]) for s in subsets(C3)}
    a = attribute(C3, [g], resamples=2000, seed=1)
    e = a.shapley["compiler"]
    assert e.value == pytest.approx(0.5)
    assert e.low < 0.5 < e.high
    assert e.low >= -1.0 and e.high <= 1.0
    assert a.shapley["timing"].value == pytest.approx(0.0)
    assert a.shapley["timing"].low < 0.0 < a.shapley["timing"].high  # pure noise straddles zero


def test_many_steps_average_their_games() -> None:
    g1 = game(C3, lambda s: float("compiler" in s))
    g2 = game(C3, lambda s: float("timing" in s))
    a = attribute(C3, [g1, g2], resamples=500)
    assert a.shapley["compiler"].value == pytest.approx(0.5)
    assert a.shapley["timing"].value == pytest.approx(0.5)
    assert a.steps == 2 and a.samples == 16
    # Resampling the two steps can pick g1 twice: the interval reaches both 0 and 1.
    assert (a.shapley["compiler"].low, a.shapley["compiler"].high) == (0.0, 1.0)


def test_two_players_interaction_is_the_second_difference() -> None:
    comps = ("compiler", "timing")
    v = {frozenset(): 0.1, frozenset({"compiler"}): 0.4, frozenset({"timing"}): 0.2, frozenset(comps): 0.9}
    a = attribute(comps, [{s: [x] for s, x in v.items()}], resamples=20)
    assert a.shapley_interaction[comps].value == pytest.approx(0.9 - 0.4 - 0.2 + 0.1)
    assert a.shapley["compiler"].value == pytest.approx(0.5 * (0.4 - 0.1) + 0.5 * (0.9 - 0.2))
    assert to_json(a)["subset_means"] == {"none": 0.1, "compiler": 0.4, "timing": 0.2, "compiler+timing": 0.9}


def test_missing_subset_is_a_clear_error() -> None:
    g = game(C3, lambda s: 1.0)
    del g[frozenset({"timing"})]
    with pytest.raises(AttributionError, match=r"\{timing\}"):
        attribute(C3, [g])


def test_json_round_trip() -> None:
    import json

    from beavertui.engine.analysis.attribution import from_json

    g = {s: [float("compiler" in s and "timing" in s), 1.0] for s in subsets(C3)}
    a = attribute(C3, [g], resamples=100, seed=3)
    back = from_json(json.loads(json.dumps(to_json(a))))
    assert back == a
