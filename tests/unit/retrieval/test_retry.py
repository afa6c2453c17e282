"""RetryingRetriever: transient failures are retried with backoff, persistent ones narrowed down to
the queries that fail and named; nothing partial is returned; rageval's own errors pass through."""

from __future__ import annotations

import pytest

from rageval.errors import BackendError, ConfigError
from rageval.retrieval.retry import MAX_NAMED, RetryingRetriever
from rageval.types import RankedList


class Flaky:
    """Fails the first ``transient`` calls, and always on a batch holding a query in ``bad``."""

    def __init__(self, transient=0, bad=(), error=TimeoutError):
        self.transient, self.bad, self.error, self.calls = transient, set(bad), error, []
        self.index_name, self.closed = "idx", False

    def search(self, queries, depth):
        self.calls.append(list(queries))
        if self.transient:
            self.transient -= 1
            raise self.error("read timed out")
        if self.bad & set(queries):
            raise self.error(f"cannot search {sorted(self.bad & set(queries))}")
        return [RankedList((f"{q}-doc",), (1.0,)) for q in queries]

    def close(self):
        self.closed = True


def test_a_transient_failure_is_retried_with_exponential_backoff():
    waits = []
    r = RetryingRetriever(Flaky(transient=2), retries=2, backoff=0.5, sleep=waits.append)
    got = r.search(["a", "b"], 3)
    assert [g.ids for g in got] == [("a-doc",), ("b-doc",)] and waits == [0.5, 1.0]


def test_persistent_failures_are_narrowed_down_to_the_failing_queries_and_named():
    inner = Flaky(bad={"q3", "q6"})
    r = RetryingRetriever(inner, retries=1, backoff=0, sleep=lambda s: None)
    with pytest.raises(BackendError) as err:
        r.search([f"q{i}" for i in range(8)], 3)
    assert err.value.failed_queries == ["q3", "q6"]
    assert "failed 2 of 8 queries" in str(err.value) and "#3 'q3'" in str(err.value)
    assert "retries" in str(err.value)  # says what to do
    assert ["q3"] in inner.calls and ["q6"] in inner.calls  # single queries were probed


def test_probing_stops_after_max_named_failures():
    bad = {f"q{i}" for i in range(40)}
    r = RetryingRetriever(Flaky(bad=bad), retries=0, sleep=lambda s: None)
    with pytest.raises(BackendError, match="stopped looking") as err:
        r.search(sorted(bad), 3)
    assert len(err.value.failed_queries) == MAX_NAMED


def test_rageval_errors_pass_through_without_retries():
    inner = Flaky(bad={"x"}, error=ConfigError)
    r = RetryingRetriever(inner, retries=5, sleep=lambda s: pytest.fail("no retry expected"))
    with pytest.raises(ConfigError):
        r.search(["x"], 1)
    assert len(inner.calls) == 1


def test_attributes_and_close_reach_the_backend():
    inner = Flaky()
    r = RetryingRetriever(inner)
    assert r.index_name == "idx" and "retries=2" in repr(r)
    r.close()
    assert inner.closed
