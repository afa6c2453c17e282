"""rageval's pytest plugin (rageval_pytest, the ``pytest11`` entry point): the rageval_gate
fixture fails a test with the gate's table, warns on an inconclusive gate, skips without a
baseline, takes --rageval-baseline; and it imports nothing of rageval for a suite not using it."""

from __future__ import annotations

import re

import pytest

pytest_plugins = ("pytester",)

GATE_TEST = """
def test_gate(rageval_gate):
    rageval_gate("chunk=64")
"""


def comparison(status, on_inconclusive="warn"):
    from rageval.gate.compare import Comparison, MetricRow

    verdict = {"pass": "ok", "regressed": "regressed", "inconclusive": "inconclusive"}[status]
    rows = [MetricRow("ndcg@5", 0.8, 0.7, -0.1, 0.03, 0.01, verdict, 1, 2, 3)]
    return Comparison(status=status, rows=rows, k=5, n_queries=6, on_inconclusive=on_inconclusive)


@pytest.fixture
def gate_runs(monkeypatch, tmp_path):
    """The gate's re-run replaced by a scripted comparison; records what it was asked. The inner
    pytest sessions load rageval's plugin by its entry point's name and no other (the other
    installed plugins take seconds to start and are not what is tested)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    import rageval.app.check as check

    class Calls(list):
        status = comparison("pass")

    calls = Calls()

    def fake(baseline, overrides, out, *args, **kwargs):
        calls.append((str(baseline), list(overrides)))
        return calls.status, tmp_path

    monkeypatch.setattr(check, "run_check", fake)
    return calls


def test_a_regression_fails_the_test_with_the_table(pytester, gate_runs):
    (pytester.path / "base.json").write_text("{}")
    pytester.makepyfile(GATE_TEST)
    gate_runs.status = comparison("regressed")
    result = pytester.runpytest_inprocess("-p", "rageval", "--rageval-baseline", "base.json")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "ndcg@5" in out and "0.8000" in out and "regressed" in out.lower()
    assert "Traceback" not in out and "def gate(" not in out  # the table, not the plugin's code
    assert gate_runs == [(str(pytester.path / "base.json"), ["chunk=64"])]
    # the gate's tests carry the rageval_gate marker: -m "not rageval_gate" leaves them out
    result = pytester.runpytest_inprocess("-p", "rageval", "-m", "not rageval_gate")
    result.assert_outcomes(deselected=1)


def test_an_inconclusive_gate_passes_with_a_pytest_warning(pytester, gate_runs):
    (pytester.path / "base.json").write_text("{}")
    pytester.makepyfile(GATE_TEST)
    pytester.makeini("[pytest]\nrageval_baseline = base.json\n")
    gate_runs.status = comparison("inconclusive")
    # (in-process, pytest finds the rageval package imported already: not the plugin's warning)
    quiet = "ignore::pytest.PytestAssertRewriteWarning"
    result = pytester.runpytest_inprocess("-p", "rageval", "-W", quiet)
    result.assert_outcomes(passed=1, warnings=1)
    # at the test's own line, not in the plugin
    assert re.search(r"test_an_inconclusive\S*\.py:2: InconclusiveGate", result.stdout.str())
    gate_runs.status = comparison("inconclusive", on_inconclusive="fail")
    pytester.runpytest_inprocess("-p", "rageval").assert_outcomes(failed=1)


def test_no_baseline_skips_saying_how_to_make_one(pytester, gate_runs):
    pytester.makepyfile(GATE_TEST)
    result = pytester.runpytest_inprocess(
        "-p", "rageval", "--rageval-baseline", "missing.json", "-rs"
    )
    result.assert_outcomes(skipped=1)
    assert "rageval promote --best" in result.stdout.str() and gate_runs == []


def test_a_suite_without_the_gate_never_imports_rageval(pytester, monkeypatch):
    pytester.makepyfile(
        """
        import sys

        def test_plain():
            assert "rageval" not in sys.modules and "torch" not in sys.modules

        def test_the_fixture_is_there(request):
            assert callable(request.getfixturevalue("rageval_gate"))
            assert "rageval" not in sys.modules  # until the gate runs
        """
    )
    # the plugin by its entry point's name alone (other installed plugins, slow to start, are
    # not loaded: what this checks is what rageval's plugin imports)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess("-p", "rageval", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_the_entry_point_registers_the_plugin():
    from importlib.metadata import entry_points

    (plugin,) = [e for e in entry_points(group="pytest11") if e.name == "rageval"]
    assert plugin.value == "rageval_pytest"
