"""rageval's pytest plugin: the retrieval gate as a test of your suite.

Registered by rageval's ``pytest11`` entry point, so it loads wherever rageval is installed; it
imports nothing of rageval until a test asks for the gate (a project that does not use it pays
nothing and sees no change: ``import rageval`` sets MKL's reproducibility mode, which must not
happen to another project's tests). It lives outside the ``rageval`` package for that reason.

    def test_retrieval_does_not_regress(rageval_gate):
        rageval_gate()                 # the project's baseline, or --rageval-baseline
        rageval_gate("chunk=256")      # with Hydra overrides on top of the baseline's config

A regression fails the test with the gate's comparison table as its message; an inconclusive
gate passes with a warning (``InconclusiveGate``, in pytest's warnings summary) unless
``gate.on_inconclusive=fail``. With no baseline yet the test is skipped, saying how to make one.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

HELP = (
    "the baseline the rageval_gate fixture compares against (default: the project's, "
    "`baseline` in rageval.yaml, found from the working directory)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rageval", "rageval retrieval gate")
    group.addoption("--rageval-baseline", metavar="PATH", default=None, help=HELP)
    parser.addini("rageval_baseline", HELP, default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "rageval_gate: a test of the retrieval gate (uses the rageval_gate fixture)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:  # -m rageval_gate selects the gate's tests, -m "not rageval_gate" skips
        if "rageval_gate" in getattr(item, "fixturenames", ()):
            item.add_marker("rageval_gate")


def _baseline(config: pytest.Config) -> Path | None:
    """--rageval-baseline, else the ini option (relative to the rootdir), else None."""
    given = config.getoption("rageval_baseline")
    if given:
        return Path(config.invocation_params.dir) / given
    ini = config.getini("rageval_baseline")
    if ini:
        return Path(config.rootpath) / ini
    return None


@pytest.fixture
def rageval_gate(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A function that runs the retrieval gate (``rageval check``) and returns its Comparison;
    a regression fails the calling test with the comparison table."""
    config = request.config

    def gate(*overrides: str, baseline: str | Path | None = None):
        from rageval.cli.paths import default_baseline  # rageval is imported here, on first use
        from rageval.testing import assert_no_regression

        path = Path(baseline) if baseline is not None else _baseline(config)
        if path is None:
            path = default_baseline()
        if not path.is_file():
            pytest.skip(
                f"no baseline at {path}: run `rageval`, then `rageval promote --best ndcg@5`"
            )
        out = tmp_path_factory.mktemp("rageval-gate")
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            try:
                cmp = assert_no_regression(path, overrides, out=out)
            except AssertionError as failed:
                pytest.fail(str(failed), pytrace=False)  # the comparison table, no traceback
        for w in said:  # an inconclusive gate's warning, at the line of the test that ran it
            warnings.warn(w.message, w.category, stacklevel=2)
        return cmp

    return gate
