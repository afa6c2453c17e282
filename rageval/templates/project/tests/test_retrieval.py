"""The retrieval gate as a test: it fails when retrieval got worse than the committed baseline
(golden/baseline.json; make one with `rageval promote`)."""

from pathlib import Path

import pytest

from rageval.project import find_project
from rageval.testing import assert_no_regression

PROJECT = find_project(start=Path(__file__).parent)


def test_retrieval_does_not_regress(tmp_path):
    if not PROJECT.baseline.is_file():
        pytest.skip("no baseline yet: run `rageval`, then `rageval promote --best ndcg@5`")
    assert_no_regression(PROJECT.baseline, out=tmp_path)
