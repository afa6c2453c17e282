"""rageval.pipeline, deprecated: for one release it re-exports the names it had (now in
rageval.run) and warns on import, naming the module to import from instead."""

import importlib
import sys
import warnings

import pytest

# every public name rageval.pipeline had, and the module of rageval.run that holds it now
MOVED = {
    "RunSpec": "rageval.run.spec",
    "evaluate": "rageval.run.evaluation",
    "LowJudgedWarning": "rageval.run.labels",
    "judged_warnings": "rageval.run.labels",
    "judgements_summary": "rageval.run.labels",
    "with_judgements": "rageval.run.labels",
    "load_inputs": "rageval.run.load",
    "embeds": "rageval.run.embed",
    "TimedEncoder": "rageval.run.embed",
    "chunk_token_stats": "rageval.run.chunk",
    "search_depth": "rageval.run.search",
    "request_counts": "rageval.run.index",
    "collapse_to_documents": "rageval.run.score",
    "score_run": "rageval.run.score",
    "stage_metrics": "rageval.run.score",
    "ann_recall": "rageval.run.measure",
    "LATENCY_REPEATS": "rageval.run.measure",
    "REPEAT_BELOW_MS": "rageval.run.measure",
}


@pytest.fixture
def fresh_import():
    """Imports rageval.pipeline anew (its warning comes once per process), then puts back the
    module an earlier import left."""
    before = sys.modules.pop("rageval.pipeline", None)
    yield lambda: importlib.import_module("rageval.pipeline")
    if before is None:
        sys.modules.pop("rageval.pipeline", None)
    else:
        sys.modules["rageval.pipeline"] = before


def test_importing_the_pipeline_warns_and_names_the_new_module(fresh_import):
    with pytest.warns(DeprecationWarning, match=r"rageval\.pipeline is deprecated") as caught:
        fresh_import()
    message = str(next(w for w in caught if w.category is DeprecationWarning).message)
    assert "rageval.run.evaluation" in message


def test_the_pipeline_still_exposes_every_name_it_had(fresh_import):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        shim = fresh_import()
    assert set(MOVED) <= set(shim.__all__)
    for name, module in MOVED.items():
        assert getattr(shim, name) is getattr(importlib.import_module(module), name), name


def test_the_old_import_lines_still_work():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from rageval.pipeline import LowJudgedWarning, RunSpec, evaluate
    from rageval.run.evaluation import LowJudgedWarning as warning
    from rageval.run.evaluation import RunSpec as spec
    from rageval.run.evaluation import evaluate as run

    assert (RunSpec, evaluate, LowJudgedWarning) == (spec, run, warning)
