"""Ratings with several anchors: engines held at given ratings, the others fitted against them.

The constrained fit is checked against computations written here from the model's
definition (a one-dimensional maximum found by bisection, a penalised log-likelihood
differentiated numerically, Gaussian conditioning of the one-anchor fit), then through
the real CLI on records files.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from commands import invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.results.elo import Z95
from arbiter.results.ratings import fit
from arbiter.results.records import GameRecord, Termination

Counts = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
LOGIT = math.log(10) / 400  # logits per Elo


def log_p(diff_elo: float) -> float:
    """Log of the probability that the side ahead by ``diff_elo`` wins."""
    return -math.log1p(10.0 ** (-diff_elo / 400.0))


def penalised_nll(elo: Floats, seat: float, wins: Counts, losses: Counts, prior: float) -> float:
    """Negated log-likelihood plus prior, cell by cell from the model's definition: each
    engine's ``prior`` virtual games, half won, are against the mean of the engines with
    games (anchors included), the seat's between equal engines."""
    n = len(elo)
    played = wins + losses
    active = [i for i in range(n) if played[i].sum() + played[:, i].sum() > 0]
    mean = float(np.mean(elo[active]))
    total = 0.0
    for i in range(n):
        for j in range(n):
            d = float(elo[i] - elo[j]) + seat
            total -= int(wins[i, j]) * log_p(d) + int(losses[i, j]) * log_p(-d)
    for i in active:
        total -= prior / 2 * (log_p(float(elo[i]) - mean) + log_p(mean - float(elo[i])))
    total -= prior / 2 * (log_p(seat) + log_p(-seat))
    return total


def bisect(f: Callable[[float], float], lo: float, hi: float) -> float:
    """The root of a decreasing function between lo and hi."""
    assert f(lo) > 0 > f(hi)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    return (lo + hi) / 2


def counts(n: int, games: Mapping[tuple[int, int], tuple[int, int]]) -> tuple[Counts, Counts]:
    """Seat-1 (wins, losses) per ordered pair (seat 1, seat 2)."""
    wins = np.zeros((n, n), dtype=np.int64)
    losses = np.zeros((n, n), dtype=np.int64)
    for (i, j), (w, lo) in games.items():
        wins[i, j], losses[i, j] = w, lo
    return wins, losses


# ------------------------------------------------------------- the constrained fit


def test_one_free_engine_between_two_anchors_solves_its_score_equation() -> None:
    # x scored 9 of 12 against a (rated 0) and 2 of 8 against b (rated 400); a and b also
    # played each other, which says nothing about x once both are fixed.
    names = ["a", "b", "x"]
    wins, losses = counts(
        3,
        {
            (2, 0): (5, 1),
            (0, 2): (2, 4),
            (2, 1): (1, 3),
            (1, 2): (3, 1),
            (0, 1): (4, 1),
            (1, 0): (2, 3),
        },
    )
    result = fit(names, wins, losses, prior=0.0, anchors={"a": 0.0, "b": 400.0}, seat_term=False)
    # Maximum likelihood: expected wins equal actual wins, a 1-D equation in x.
    opponents = [(0.0, 12, 9), (400.0, 8, 2)]

    def excess(x: float) -> float:
        return sum(w - g / (1 + 10 ** (-(x - r) / 400)) for r, g, w in opponents)

    x = bisect(excess, -2000.0, 2000.0)
    assert result.converged and not result.floating
    assert result.elo[2] == pytest.approx(x, abs=1e-5)
    # Its error is the curvature's: the information of its games, given the anchors.
    info = (
        sum(g * p * (1 - p) for r, g, _ in opponents for p in [1 / (1 + 10 ** (-(x - r) / 400))])
        * LOGIT**2
    )
    assert result.error[2] == pytest.approx(Z95 / math.sqrt(info), rel=1e-6)
    assert list(result.elo[:2]) == [0.0, 400.0] and list(result.error[:2]) == [0.0, 0.0]
    # Its difference to an anchor has its own error only; between the anchors there is none.
    assert result.diff(2, 0) == pytest.approx((x, Z95 / math.sqrt(info)))
    assert result.diff(1, 0) == (400.0, 0.0) and result.los(1, 0) == 1.0
    assert result.anchors == (("a", 0.0), ("b", 400.0)) and result.anchor is None
    assert result.anchored(0) and result.anchored(1) and not result.anchored(2)


def test_the_prior_pulls_towards_the_pool_mean_anchors_included() -> None:
    # x won all its games: without a prior it would be unbounded; with one, the virtual
    # games against the mean of a, b and x (all of the pool) keep it finite.
    names = ["a", "b", "x"]
    wins, losses = counts(
        3,
        {
            (2, 0): (3, 0),
            (0, 2): (0, 3),
            (2, 1): (2, 0),
            (1, 2): (0, 1),
            (0, 1): (2, 2),
            (1, 0): (2, 2),
        },
    )
    prior = 2.0
    anchors = {"a": -100.0, "b": 300.0}
    result = fit(names, wins, losses, prior=prior, anchors=anchors, seat_term=False)

    def objective(x: float) -> float:
        return penalised_nll(np.array([-100.0, 300.0, x]), 0.0, wins, losses, prior)

    h = 1e-3
    x = bisect(lambda x: (objective(x - h) - objective(x + h)) / (2 * h), -3000.0, 3000.0)
    assert result.converged
    assert result.elo[2] == pytest.approx(x, abs=1e-3)
    assert not fit(names, wins, losses, prior=0.0, anchors=anchors, seat_term=False).converged


def reference_check(
    names: list[str], wins: Counts, losses: Counts, prior: float, anchors: dict[str, float]
) -> None:
    """The fit maximises the penalised likelihood over the free ratings and the seat term
    (numerical gradient 0), its covariance is the inverse numerical Hessian there, and the
    anchors keep their values exactly with no error."""
    result = fit(names, wins, losses, prior=prior, anchors=anchors)
    assert result.converged
    held = [names.index(a) for a in anchors]
    free = [i for i in range(len(names)) if i not in held]
    for i in held:
        assert result.elo[i] == anchors[names[i]] and result.error[i] == 0.0
        assert not result.covariance[i].any() and not result.covariance[:, i].any()

    def objective(z: Floats) -> float:  # z: the free ratings, then the seat term, in Elo
        elo = np.array(result.elo, dtype=float)
        elo[free] = z[:-1]
        return penalised_nll(elo, float(z[-1]), wins, losses, prior)

    z0 = np.append(result.elo[free], result.seat_advantage)
    m = z0.size
    step = np.eye(m)
    h = 0.01  # Elo
    grad = np.array(
        [(objective(z0 + h * step[a]) - objective(z0 - h * step[a])) / (2 * h) for a in range(m)]
    )
    # At 1 Elo from the maximum the gradient is about the curvature (1e-3 per Elo here and
    # more): at the maximum it is zero but for the fit's tolerance and rounding.
    assert np.abs(grad).max() < 1e-6
    h = 1.0

    def second(a: int, b: int) -> float:
        plus, minus = h * (step[a] + step[b]), h * (step[a] - step[b])
        return (
            objective(z0 + plus)
            - objective(z0 + minus)
            - objective(z0 - minus)
            + objective(z0 - plus)
        ) / (4 * h * h)

    hess = np.array([[second(a, b) for b in range(m)] for a in range(m)])
    cov = np.linalg.inv(hess)
    np.testing.assert_allclose(result.covariance[np.ix_(free, free)], cov[:-1, :-1], rtol=1e-3)
    assert result.seat_error == pytest.approx(Z95 * math.sqrt(cov[-1, -1]), rel=1e-3)


def test_the_fit_is_the_constrained_maximum_with_its_curvature() -> None:
    rng = np.random.default_rng(11)
    n = 6
    strengths = np.array([-300.0, -80.0, 0.0, 120.0, 250.0, 400.0])
    games = rng.integers(2, 12, (n, n))
    np.fill_diagonal(games, 0)
    p = 1 / (1 + 10 ** (-(strengths[:, None] - strengths[None, :] + 30) / 400))
    wins = rng.binomial(games, p).astype(np.int64)
    losses = (games - wins).astype(np.int64)
    names = list("abcdef")
    for prior in (2.0, 0.0):
        reference_check(names, wins, losses, prior, {"a": -300.0, "f": 400.0})
        reference_check(names, wins, losses, prior, {"b": 0.0, "c": 50.0, "e": 500.0})


@settings(max_examples=25, deadline=None)
@given(
    st.integers(3, 5),
    st.lists(st.integers(0, 6), min_size=50, max_size=50),
    st.floats(-800, 800),
    st.floats(-800, 800),
    st.sampled_from([0.5, 2.0, 10.0]),
)
def test_any_pool_is_fitted_at_its_constrained_maximum(
    n: int, cells: list[int], first: float, second: float, prior: float
) -> None:
    wins = np.array(cells[: n * n]).reshape(n, n)
    losses = np.array(cells[25 : 25 + n * n]).reshape(n, n)
    np.fill_diagonal(wins, 0)
    np.fill_diagonal(losses, 0)
    names = [f"e{i}" for i in range(n)]
    result = fit(names, wins, losses, prior=prior, anchors={"e0": first, "e1": second})
    assert result.converged
    assert result.elo[0] == first and result.elo[1] == second
    assert result.error[0] == result.error[1] == 0.0
    if (wins + losses)[:2].sum() + (wins + losses)[:, :2].sum() and not result.floating:
        reference_check(names, wins, losses, prior, {"e0": first, "e1": second})


def test_anchors_where_the_fit_puts_them_change_nothing_but_the_errors() -> None:
    """Anchoring a second engine at the rating the one-anchor fit gives it leaves every
    rating where it was; the errors become those of the one-anchor fit conditioned on that
    engine's rating (Gaussian conditioning: a Schur complement of its covariance)."""
    rng = np.random.default_rng(3)
    n = 5
    wins = rng.integers(0, 20, (n, n))
    losses = rng.integers(0, 20, (n, n))
    np.fill_diagonal(wins, 0)
    np.fill_diagonal(losses, 0)
    names = list("abcde")
    one = fit(names, wins, losses, anchor=("b", 1500.0))
    assert fit(names, wins, losses, anchors={"b": 1500.0}).elo.tolist() == one.elo.tolist()
    two = fit(names, wins, losses, anchors={"b": 1500.0, "d": float(one.elo[3])})
    np.testing.assert_allclose(two.elo, one.elo, atol=1e-6)
    assert two.seat_advantage == pytest.approx(one.seat_advantage, abs=1e-6)
    s = one.covariance
    free, given_ = [0, 2, 4], [3]
    schur = (
        s[np.ix_(free, free)]
        - s[np.ix_(free, given_)]
        @ np.linalg.inv(s[np.ix_(given_, given_)])
        @ s[np.ix_(given_, free)]
    )
    np.testing.assert_allclose(two.covariance[np.ix_(free, free)], schur, rtol=1e-6)
    assert np.all(two.error[free] < one.error[free])
    # Anchored elsewhere, the second anchor stretches the scale: the others move with it.
    apart = fit(names, wins, losses, anchors={"b": 1500.0, "d": float(one.elo[3]) + 300})
    assert apart.elo[3] == float(one.elo[3]) + 300 and apart.elo[1] == 1500.0
    assert not np.allclose(apart.elo, one.elo + (apart.elo[3] - one.elo[3]))


def test_components_are_rated_by_their_own_anchors_or_said_to_float() -> None:
    # Two groups that never met, each with an anchor, and a third group with none.
    names = ["a", "b", "c", "d", "e", "f"]
    wins, losses = counts(
        6,
        {
            (0, 1): (3, 2),
            (1, 0): (2, 3),
            (2, 3): (4, 1),
            (3, 2): (1, 3),
            (4, 5): (2, 2),
            (5, 4): (3, 1),
        },
    )
    both = {"a": 0.0, "c": 1000.0}
    plain = fit(names[:4], wins[:4, :4], losses[:4, :4], prior=0.0, anchors=both)
    assert plain.converged and not plain.connected and plain.floating == ()
    assert plain.elo[0] == 0.0 and plain.elo[2] == 1000.0
    assert all(math.isfinite(e) for e in plain.error)
    # Without the seat term the groups share nothing: each group's free engine is fitted
    # against its own anchor alone.
    apart = fit(names[:4], wins[:4, :4], losses[:4, :4], prior=0.0, anchors=both, seat_term=False)
    for anchored, other in ((0, 1), (2, 3)):
        sub = [anchored, other]
        alone = fit(
            [names[i] for i in sub],
            wins[np.ix_(sub, sub)],
            losses[np.ix_(sub, sub)],
            prior=0.0,
            anchor=(names[anchored], apart.elo[anchored]),
            seat_term=False,
        )
        assert apart.elo[other] == pytest.approx(alone.elo[1], abs=1e-5)
        assert apart.error[other] == pytest.approx(alone.error[1], rel=1e-6)

    # The third group has no anchor: undetermined without a prior, placed by it with one.
    lost = fit(names, wins, losses, prior=0.0, anchors=both)
    assert not lost.converged and lost.floating == (("e", "f"),)
    why = "e, f never played an anchored engine, directly or through other engines"
    assert why in lost.unbounded
    assert lost.error[0] == 0.0 and math.isinf(lost.error[1])
    placed = fit(names, wins, losses, anchors=both)
    assert placed.converged and placed.floating == (("e", "f"),)
    assert np.all(np.isfinite(placed.error))


def test_anchors_without_games_keep_their_value() -> None:
    names = ["a", "b", "c", "idle"]
    wins, losses = counts(4, {(0, 1): (3, 2), (1, 2): (2, 2), (2, 0): (1, 3)})
    result = fit(names, wins, losses, anchors={"a": 100.0, "idle": 900.0, "c": -50.0})
    assert result.converged and result.floating == ()
    assert [result.elo[i] for i in (0, 2, 3)] == [100.0, -50.0, 900.0]
    assert [result.error[i] for i in (0, 2, 3)] == [0.0, 0.0, 0.0]
    assert math.isfinite(result.error[1])


def test_bad_anchors_are_refused() -> None:
    names = ["a", "b"]
    wins, losses = counts(2, {(0, 1): (1, 1)})
    with pytest.raises(ValueError, match=r"unknown anchor engine 'z'; known engines: a, b"):
        fit(names, wins, losses, anchors={"a": 0.0, "z": 1.0})
    with pytest.raises(ValueError, match=r"anchor Elo must be finite, not nan \(engine 'b'\)"):
        fit(names, wins, losses, anchors={"a": 0.0, "b": math.nan})
    with pytest.raises(ValueError, match="not both"):
        fit(names, wins, losses, anchor=("a", 0.0), anchors={"b": 1.0})


# ------------------------------------------------------------------- through the CLI


def write_records(path: Path, games: list[tuple[str, str, str]]) -> Path:
    """Rated games (seat 1, seat 2, winner) as a records file."""
    lines = [
        GameRecord(
            game_id=f"g-{n}",
            variant={"size": 5, "islands": 4, "pie": True},
            seat1=s1,
            seat2=s2,
            tc={"seat1": "5+0", "seat2": "5+0"},
            started=f"2025-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z",
            finished="2025-01-01T01:00:00.000Z",
            winner=w,
            termination=Termination.RESIGN,
            pair=f"p{n // 2}",
        ).dumps()
        + "\n"
        for n, (s1, s2, w) in enumerate(games)
    ]
    path.write_text("".join(lines))
    return path


CHAIN = {  # (seat 1, seat 2): (seat 1's wins, its losses)
    ("a", "b"): (2, 1),
    ("b", "a"): (1, 2),
    ("b", "c"): (3, 1),
    ("c", "b"): (1, 2),
    ("c", "d"): (1, 2),
    ("d", "c"): (2, 2),
}


def chain_games(
    extra: Mapping[tuple[str, str], tuple[int, int]] | None = None,
) -> list[tuple[str, str, str]]:
    out = []
    for (s1, s2), (w, lo) in {**CHAIN, **(extra or {})}.items():
        out += [(s1, s2, s1)] * w + [(s1, s2, s2)] * lo
    return out


def test_ratings_with_two_anchors(tmp_path: Path) -> None:
    records = write_records(tmp_path / "r.jsonl", chain_games())
    done = invoke("ratings", str(records), "--json", "--anchor", "a=0", "--anchor", "d=1000")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["anchors"] == [{"name": "a", "elo": 0.0}, {"name": "d", "elo": 1000.0}]
    assert data["floating"] is None
    by_name = {e["name"]: e for e in data["engines"]}
    names = ["a", "b", "c", "d"]
    wins, losses = counts(
        4, {(names.index(s1), names.index(s2)): v for (s1, s2), v in CHAIN.items()}
    )
    expected = fit(names, wins, losses, anchors={"a": 0.0, "d": 1000.0})
    for i, name in enumerate(names):
        assert by_name[name]["elo"] == round(float(expected.elo[i]), 1)
        assert by_name[name]["error"] == round(float(expected.error[i]), 1)
    assert by_name["a"]["error"] == by_name["d"]["error"] == 0
    table = invoke("ratings", str(records), "--anchor", "a=0", "--anchor", "d=1000")
    assert table.returncode == 0, table.stderr
    assert (
        "Anchored (held at these ratings, the others fitted against them): a 0, d +1000."
        in table.stdout
    )
    centred = json.loads(invoke("ratings", str(records), "--json").stdout)
    assert centred["anchors"] is None


def test_engines_apart_from_the_anchors_are_said_to_float(tmp_path: Path) -> None:
    records = write_records(tmp_path / "r.jsonl", chain_games({("e", "f"): (2, 1)}))
    args = ("ratings", str(records), "--anchor", "a=0", "--anchor", "d=1000")
    data = json.loads(invoke(*args, "--json").stdout)
    assert data["floating"] == [["e", "f"]] and data["connected"] is False
    text = invoke(*args).stdout
    assert "Warning: e, f never played an anchored engine" in text
    # Without a prior their level is undetermined: they are unbounded, and say why.
    plain = json.loads(invoke(*args, "--json", "--prior", "0").stdout)
    why = "e, f never played an anchored engine, directly or through other engines"
    assert why in plain["unbounded"]
    # The report says so too.
    page = tmp_path / "r.html"
    assert invoke("report", str(records), "-o", str(page), "--anchor", "a=0").returncode == 0
    assert (
        "e, f never played an anchored engine, even through others: their ratings are"
        " not on the anchors' scale."
    ) in page.read_text()
    # With an anchor in each group, both groups are on the anchors' scale.
    each = invoke("ratings", str(records), "--anchor", "a=0", "--anchor", "e=500", "--json")
    assert json.loads(each.stdout)["floating"] is None
    note = invoke("ratings", str(records), "--anchor", "a=0", "--anchor", "e=500").stdout
    assert "each group is placed by its own anchors" in note and "Warning" not in note


def test_report_caption_names_every_anchor(tmp_path: Path) -> None:
    records = write_records(tmp_path / "r.jsonl", chain_games())
    page = tmp_path / "r.html"
    done = invoke(
        "report",
        str(records),
        "-o",
        str(page),
        "--anchor",
        "a=0",
        "--anchor",
        "c=500",
        "--anchor",
        "d=1000",
    )
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert (
        "anchored so that a has 0, c has +500 and d has +1000 (held at these ratings, the"
        " others fitted against them)"
    ) in html
    one = tmp_path / "one.html"
    assert invoke("report", str(records), "-o", str(one), "--anchor", "d=10").returncode == 0
    assert "anchored so that d has +10;" in one.read_text()


@pytest.mark.parametrize(
    ("anchors", "message"),
    [
        (["a=0", "a=5"], "--anchor names 'a' twice (at 0 and 5)"),
        (["a=0", "zz=5"], "--anchor names 'zz', which has no games here"),
        (["a=0", "d=nan"], "--anchor Elo nan is out of range"),
        (["a=0", "d=-inf"], "--anchor Elo -inf is out of range"),
        (["a=0", "d"], "bad --anchor 'd'"),
    ],
)
@pytest.mark.parametrize("command", ["ratings", "report"])
def test_bad_anchors_exit_2(tmp_path: Path, command: str, anchors: list[str], message: str) -> None:
    records = write_records(tmp_path / "r.jsonl", chain_games())
    before = records.read_bytes()
    args = [command, str(records)] + (
        ["-o", str(tmp_path / "r.html")] if command == "report" else []
    )
    for a in anchors:
        args += ["--anchor", a]
    done = invoke(*args)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert records.read_bytes() == before and not (tmp_path / "r.html").exists()
