"""The random human sample of labels=ppi: seeded, stratified in proportion, and its file
refused with the key that is wrong."""

from __future__ import annotations

import json

import pytest

from rageval.errors import ConfigError, InputError
from rageval.inputs.ppi_sample import allocate, draw_sample, load_sample


def test_the_sample_is_seeded_and_stratified_in_proportion():
    assert allocate({"a": 100, "b": 10, "c": 3}, 10) == {"a": 9, "b": 1, "c": 0}
    assert sum(allocate({"a": 5, "b": 5, "c": 5}, 7).values()) == 7
    rows = [{"id": f"q{i}", "source": "ticket" if i < 60 else "synthetic"} for i in range(80)]
    one = draw_sample(rows, 20, seed=1, judge="llm:m", strata="source")
    assert one == draw_sample(rows, 20, seed=1, judge="llm:m", strata="source")
    assert one != draw_sample(rows, 20, seed=2, judge="llm:m", strata="source")
    assert sum(int(q[1:]) < 60 for q in one.queries) == 15  # 60 of 80 tickets: 15 of 20
    assert len(set(one.queries)) == 20 and one.population == 80


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"judge": "llm:m", "seed": 0, "queries": ["q1", "zz"]}, "'zz' is not a query"),
        ({"judge": "human:ana", "seed": 0, "queries": ["q1", "q2"]}, "key 'judge'"),
        ({"judge": "llm:m", "seed": "0", "queries": ["q1", "q2"]}, "key 'seed'"),
        ({"judge": "llm:m", "seed": 0, "queries": ["q1"]}, "at least 2"),
        ({"judge": "llm:m", "seed": 0, "queries": ["q1", "q2"], "code": 1}, "unknown key 'code'"),
    ],
)
def test_a_bad_sample_file_names_the_file_and_key(tmp_path, data, match):
    path = tmp_path / "judgements.sample.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=match) as err:
        load_sample(path, ["q1", "q2", "q3"])
    assert str(err.value).startswith(str(path))


def test_a_sample_as_large_as_the_set_is_refused():
    rows = [{"id": f"q{i}", "source": None} for i in range(5)]
    with pytest.raises(ConfigError, match="not below the 5 queries"):
        draw_sample(rows, 5, seed=0, judge="llm:m")
    with pytest.raises(ConfigError, match="llm:<model>"):
        draw_sample(rows, 2, seed=0, judge="gpt")
