"""The bisect's search, apart from its sittings: an oracle plays the sittings (``judgement/bisection.py``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from hypothesis import assume, given
from hypothesis import strategies as st

from pytest_accel.judgement.bisection import Bisection, Finding, Judged, Step

# An oracle: (test, commit index) -> the test's time at that commit, 1.0 before any change.
Times = Callable[[str, int], float]


def run(bisection: Bisection, times: Times, tolerance: float = 0.05,
        unmeasurable: frozenset[int] = frozenset(), undecided: frozenset[int] = frozenset()) -> list[Step]:  # fmt: skip
    """Play every step: a commit is bad against its anchor when its time is beyond the tolerance."""
    steps = []
    while (step := bisection.next_step()) is not None:
        steps.append(step)
        assert len(steps) < 100, steps
        if step.commit in unmeasurable:
            bisection.unmeasurable_commit(step.commit, "does not import")
            continue
        judged: Mapping[str, Judged] = {
            test: Judged.UNDECIDED if step.commit in undecided else
            Judged.BAD if times(test, step.commit) > times(test, step.anchor) * (1 + tolerance) else Judged.GOOD
            for test in step.tests
        }  # fmt: skip
        bisection.record(step, judged)
    return steps


def step_at(culprit: int, factor: float = 1.15) -> Times:
    return lambda test, i: factor if i >= culprit else 1.0


@given(st.integers(min_value=2, max_value=40), st.data())
def test_a_single_step_is_found_in_about_log2_sittings(length: int, data: st.DataObject) -> None:
    culprit = data.draw(st.integers(min_value=1, max_value=length - 1))
    bisection = Bisection([f"c{i}" for i in range(length)], ["t"])
    steps = run(bisection, step_at(culprit))
    (finding,) = bisection.findings["t"]
    assert finding.exact and finding.culprit == culprit and finding.last_good == culprit - 1
    searched = [s for s in steps if s.kind == "search"]
    assert len(searched) <= math.ceil(math.log2(length))
    # a culprit before the bad commit is checked against it once: nothing more to the change
    assert [s.kind for s in steps].count("rest") == (culprit != length - 1)
    assert finding.rest == ("good" if culprit != length - 1 else "")


def test_sixteen_commits_take_four_search_sittings_and_one_for_the_rest() -> None:
    bisection = Bisection([f"c{i}" for i in range(17)], ["a", "b"])
    steps = run(bisection, step_at(11))
    assert [(s.kind, s.anchor, s.commit, s.tests) for s in steps] == [
        ("search", 0, 8, ("a", "b")), ("search", 0, 12, ("a", "b")), ("search", 0, 10, ("a", "b")),
        ("search", 0, 11, ("a", "b")), ("rest", 11, 16, ("a", "b")),
    ]  # fmt: skip


def test_a_change_in_two_steps_names_both_commits() -> None:
    times = lambda test, i: 1.0 * (1.08 if i >= 5 else 1.0) * (1.08 if i >= 12 else 1.0)  # noqa: E731
    bisection = Bisection([f"c{i}" for i in range(17)], ["t"])
    run(bisection, times)
    first, second = bisection.findings["t"]
    assert (first.culprit, first.anchor, first.rest) == (5, 0, "bad")
    assert (second.culprit, second.anchor, second.rest) == (12, 5, "good")


def test_tests_that_moved_at_different_commits_part_and_each_names_its_own() -> None:
    times = lambda test, i: 1.2 if i >= {"early": 3, "late": 13}[test] else 1.0  # noqa: E731
    bisection = Bisection([f"c{i}" for i in range(17)], ["early", "late"])
    steps = run(bisection, times)
    assert steps[0].tests == ("early", "late")  # one sitting while their answers agree
    assert bisection.findings["early"][0].culprit == 3 and bisection.findings["late"][0].culprit == 13
    assert any(s.tests == ("early",) for s in steps) and any(s.tests == ("late",) for s in steps)


def test_an_unmeasurable_commit_is_skipped_and_named_when_it_could_be_the_culprit() -> None:
    bisection = Bisection([f"c{i}" for i in range(9)], ["t"])
    run(bisection, step_at(4), unmeasurable=frozenset({4}))
    (finding,) = bisection.findings["t"]
    assert finding.suspects == (4, 5) and not finding.exact and bisection.unmeasurable == {4: "does not import"}


def test_an_unmeasurable_commit_away_from_the_culprit_costs_a_step_and_no_precision() -> None:
    bisection = Bisection([f"c{i}" for i in range(9)], ["t"])
    run(bisection, step_at(6), unmeasurable=frozenset({4}))
    (finding,) = bisection.findings["t"]
    assert finding.exact and finding.culprit == 6


def test_an_undecided_commit_is_never_taken_for_good_or_bad() -> None:
    bisection = Bisection([f"c{i}" for i in range(9)], ["t"])
    run(bisection, step_at(5), undecided=frozenset({4}))
    (finding,) = bisection.findings["t"]
    assert finding.suspects == (4, 5)  # c4 may be the culprit: said, not guessed


def test_a_range_of_one_commit_names_it_without_a_sitting() -> None:
    bisection = Bisection(["good", "bad"], ["t"])
    assert bisection.next_step() is None
    assert bisection.findings["t"] == [Finding(0, 0, (1,))]


def test_a_stopped_search_says_what_it_narrowed_the_range_to() -> None:
    bisection = Bisection([f"c{i}" for i in range(17)], ["t"])
    step = bisection.next_step()
    assert step is not None
    bisection.record(step, {"t": Judged.BAD})
    assert bisection.open_ranges() == {"t": (0, 8)}


@given(st.lists(st.floats(min_value=0.9, max_value=1.3), min_size=1, max_size=20))
def test_any_history_of_times_ends_and_every_finding_is_a_real_crossing(factors: list[float]) -> None:
    """Whatever the times do between a good and a bad commit (steps, speedups, wander), the search ends, and
    each culprit is bad against its anchor while the last good commit before it is not."""
    times = lambda test, i: math.prod(factors[:i])  # noqa: E731
    assume(times("t", len(factors)) > 1.05)  # the bisect starts from a range confirmed slower
    commits = [f"c{i}" for i in range(len(factors) + 1)]
    bisection = Bisection(commits, ["t"])
    run(bisection, times)
    for finding in bisection.findings["t"]:
        anchor = times("t", finding.anchor)
        assert times("t", finding.culprit) > anchor * 1.05
        assert times("t", finding.last_good) <= anchor * 1.05


def test_a_withdrawn_culprit_whose_rest_found_the_next_step_leaves_that_finding_alone() -> None:
    """quiet-2 (docs/studies/bisect): a step read harmless commit 4 slower, the rest (16 against 4) was slower
    and a second search found commit 7; commit 4 then read not slower twice. Commit 7 stands, alone."""
    bisection = Bisection([f"c{i}" for i in range(17)], ["t"])
    bisection.searches["t"].good, bisection.searches["t"].bad = 3, 4  # a step misread commit 4 as slower
    bisection.next_step()  # settles: culprit 4, its rest due
    bisection.record(Step("rest", 4, 16, ("t",)), {"t": Judged.BAD})
    run(bisection, step_at(7))
    assert [(f.culprit, f.anchor) for f in bisection.findings["t"]] == [(4, 0), (7, 4)]
    bisection.withdraw("t", 4)
    assert [(f.culprit, f.anchor) for f in bisection.findings["t"]] == [(7, 4)]
    assert [f.culprit for f in bisection.withdrawn["t"]] == [4] and bisection.next_step() is None


def test_a_withdrawn_culprit_that_explained_the_whole_change_resumes_its_search_after_it() -> None:
    bisection = Bisection([f"c{i}" for i in range(17)], ["t"])
    bisection.searches["t"].good, bisection.searches["t"].bad = 3, 4  # a step misread commit 4 as slower
    bisection.next_step()  # settles: culprit 4, its rest due
    bisection.record(Step("rest", 4, 16, ("t",)), {"t": Judged.GOOD})  # the rest read as good: nothing more
    assert [f.culprit for f in bisection.findings["t"]] == [4]
    bisection.withdraw("t", 4)
    assert bisection.findings["t"] == [] and [f.culprit for f in bisection.withdrawn["t"]] == [4]
    steps = run(bisection, step_at(11))
    assert steps[0].anchor == 0 and 4 < steps[0].commit < 16
    (finding,) = bisection.findings["t"]
    assert finding.exact and (finding.culprit, finding.anchor, finding.last_good) == (11, 0, 10)


def test_a_withdrawn_bad_commit_leaves_nothing_to_resume() -> None:
    bisection = Bisection(["c0", "c1", "c2"], ["t"])
    run(bisection, step_at(2))
    bisection.withdraw("t", 2)
    assert bisection.findings["t"] == [] and bisection.next_step() is None and bisection.open_ranges() == {}
