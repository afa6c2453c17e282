"""Hostile input files: the loaders, the TREC/BEIR readers and the metrics either work or raise a
RagevalError naming the file (and line), exit code 2; never another exception, never a hang."""

from __future__ import annotations

import contextlib
import io
import json
import math
import signal
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval.cli.main import main
from rageval.errors import RagevalError
from rageval.formats.trec import read_qrels, read_run
from rageval.inputs.beir import load_beir
from rageval.inputs.corpus import load_corpus
from rageval.inputs.golden import load_golden
from rageval.scoring.metrics import score_rankings

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.just(10**40)
)
VALUES = st.recursive(
    SCALARS,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=6,
)
NASTY_TEXT = st.sampled_from(["", " ", "q1", "\u2028", "\ud800", "x\x00y", "\ufeffq", "é" * 3, "²"])
TEXTS = st.text(max_size=12) | NASTY_TEXT


@contextlib.contextmanager
def no_hang(seconds: float = 10.0):
    """Fail (instead of hanging the suite) when the block runs longer than ``seconds``."""

    def expire(*_):
        raise TimeoutError(f"took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def encode_line(obj, raw: str | None, ascii_only: bool) -> bytes:
    text = raw if raw is not None else json.dumps(obj, ensure_ascii=ascii_only)
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate becomes invalid UTF-8


@st.composite
def jsonl_bytes(draw, fields: dict) -> bytes:
    """A JSONL file: objects with any mix of right and wrong fields, junk lines, a BOM, bad
    bytes."""
    objs = st.fixed_dictionaries({}, optional={k: v | VALUES for k, v in fields.items()})
    lines = draw(st.lists(st.tuples(objs | VALUES, st.none() | TEXTS, st.booleans()), max_size=6))
    out = [encode_line(*line) for line in lines]
    if out and draw(st.booleans()):
        out.append(out[0])  # a duplicate line: duplicate ids
    data = b"\n".join(out)
    return (
        draw(st.sampled_from([b"", b"\xef\xbb\xbf"]))
        + data
        + draw(st.sampled_from([b"", b"\n", b"\xff", b"\r\n\x80"]))
    )


def assert_reported(err: BaseException, path: Path, *file_level: str) -> None:
    """A RagevalError (exit 2) naming ``path``, and a line unless the problem is the whole file."""
    assert isinstance(err, RagevalError), f"{type(err).__name__}: {err}"
    assert err.exit_code == 2 and str(path) in str(err)
    if not any(s in str(err) for s in file_level):
        assert err.line is not None, str(err)


def attempt(fn, *args):
    try:
        with no_hang(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args), None
    except Exception as err:  # noqa: BLE001 (the assertion says which kind it must be)
        return None, err


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hostile")


GOLDEN = {
    "id": TEXTS | st.integers(),
    "query": TEXTS,
    "relevant": st.lists(TEXTS, max_size=2) | st.dictionaries(TEXTS, SCALARS, max_size=2),
    "relevant_docs": st.lists(TEXTS, max_size=2),
    "evidence": st.lists(
        st.fixed_dictionaries({"doc": TEXTS, "quote": TEXTS}, optional={"grade": SCALARS}),
        max_size=2,
    ),
    "source": TEXTS,
    "tags": st.lists(TEXTS, max_size=2),
}


@SETTINGS
@given(data=jsonl_bytes(GOLDEN))
def test_golden_loader_reports_every_bad_file_with_its_line(work, data):
    path = work / "golden.jsonl"
    path.write_bytes(data)
    golden, err = attempt(load_golden, path)
    if err is not None:
        return assert_reported(err, path, "golden set is empty")
    assert golden.digest and len({q.id for q in golden.queries}) == len(golden.queries)
    for q in golden.queries:  # everything loaded is real text that later stages can encode
        assert q.query.strip() and q.id.encode() and q.query.encode()
        assert all(
            isinstance(g, int) and g >= 0 for g in (*q.relevant.values(), *q.relevant_docs.values())
        )


CORPUS = {
    "id": TEXTS | st.integers() | st.booleans(),
    "_id": TEXTS,
    "title": TEXTS | SCALARS,
    "text": TEXTS,
}


@SETTINGS
@given(data=jsonl_bytes(CORPUS))
def test_corpus_jsonl_reports_every_bad_file_with_its_line(work, data):
    path = work / "corpus.jsonl"
    path.write_bytes(data)
    docs, err = attempt(load_corpus, path)
    if err is not None:
        return assert_reported(err, path, "corpus is empty")
    assert len({d.id for d in docs}) == len(docs)
    assert all(d.text.strip() and d.text.encode() and d.id.encode() for d in docs)


@SETTINGS
@given(
    files=st.lists(
        st.binary(max_size=40) | TEXTS.map(lambda t: t.encode("utf-8", "surrogatepass")),
        min_size=1,
        max_size=3,
    )
)
def test_corpus_folder_reports_the_bad_file(work, files):
    folder = work / "folder"
    for old in folder.glob("*"):
        old.unlink()
    folder.mkdir(exist_ok=True)
    for i, data in enumerate(files):
        (folder / f"doc{i}.md").write_bytes(data)
    docs, err = attempt(load_corpus, folder)
    if err is not None:
        bad = [folder / f"doc{i}.md" for i in range(len(files))]
        assert isinstance(err, RagevalError) and err.exit_code == 2, repr(err)
        assert err.path in {str(folder), *map(str, bad)} and (err.line or "empty" in str(err))
        return
    assert [d.id for d in docs] == sorted(d.id for d in docs) and all(d.text.strip() for d in docs)


FIELD = st.sampled_from(
    [
        "q1",
        "q2",
        "d1",
        "d2",
        "0",
        "1",
        "-3",
        "Q0",
        "nan",
        "inf",
        "-inf",
        "1e400",
        "1e39",
        "2",
        "9" * 30,
        "²",
        "١",
        "x\x0by",
        "run",
    ]
)
TREC_LINE = st.lists(FIELD, max_size=7).map(" ".join) | st.lists(FIELD, min_size=3, max_size=3).map(
    "\t".join
)


@st.composite
def trec_bytes(draw) -> bytes:
    lines = [
        line.encode("utf-8", "surrogatepass")
        for line in draw(st.lists(TREC_LINE | TEXTS, max_size=8))
    ]
    prefix = draw(st.sampled_from([b"", b"\xef\xbb\xbf", b"query-id\tcorpus-id\tscore\n"]))
    return prefix + b"\n".join(lines) + draw(st.sampled_from([b"", b"\n", b"\xfe"]))


@SETTINGS
@given(data=trec_bytes())
def test_qrels_reader_reports_every_bad_line(work, data):
    path = work / "qrels.txt"
    path.write_bytes(data)
    qrels, err = attempt(read_qrels, path)
    if err is not None:
        return assert_reported(err, path, "no judgements found")
    for qid, judged in qrels.items():
        assert not qid.startswith("\ufeff")  # a byte-order mark is not part of the first query id
        assert all(isinstance(g, int) and abs(g) < 2**63 for g in judged.values())


@SETTINGS
@given(data=trec_bytes())
def test_run_reader_reports_every_bad_line_and_keeps_only_finite_scores(work, data):
    path = work / "run.txt"
    path.write_bytes(data)
    run, err = attempt(read_run, path)
    if err is not None:
        return assert_reported(err, path, "no results found")
    assert all(math.isfinite(s) for r in run.values() for s in r.scores)


@SETTINGS
@given(
    corpus=jsonl_bytes(CORPUS),
    queries=jsonl_bytes({"_id": TEXTS, "text": TEXTS}),
    qrels=trec_bytes(),
)
def test_beir_reader_names_the_file_that_is_wrong(work, corpus, queries, qrels):
    root = work / "beir"
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    files = {"corpus.jsonl": corpus, "queries.jsonl": queries, "qrels/test.tsv": qrels}
    for name, data in files.items():
        (root / name).write_bytes(data)
    data, err = attempt(load_beir, root)
    if err is not None:
        assert isinstance(err, RagevalError) and err.exit_code == 2, repr(err)
        assert err.path in {str(root / name) for name in files}, str(err)
        return
    assert data.golden.queries and all(q.relevant_docs for q in data.golden.queries)


IDS = st.lists(st.sampled_from("abcdefgh"), max_size=12)
QRELS = st.dictionaries(
    st.sampled_from(["q1", "q2", "q3"]),
    st.dictionaries(st.sampled_from("abcdefghij"), st.integers(-2, 4), max_size=6),
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(
    rankings=st.lists(IDS, min_size=3, max_size=3),
    qrels=QRELS,
    ks=st.lists(st.integers(1, 30) | st.just(10**12), min_size=1, max_size=4),
)
def test_metrics_of_any_ranking_are_bounded_and_a_huge_cutoff_costs_nothing(rankings, qrels, ks):
    qids = ["q1", "q2", "q3"]
    with no_hang(5), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate ids are dropped with a warning
        scores = score_rankings(qids, rankings, qrels, ks)
        huge = score_rankings(qids, rankings, qrels, [10**12])  # beyond every ranking and judgement
        deep = score_rankings(qids, rankings, qrels, [40])
    for values in scores.values.values():
        assert all(0.0 <= v <= 1.0 for v in values)
    for name in ("recall", "hit_rate", "mrr", "ndcg", "map"):
        assert list(huge.values[f"{name}@{10**12}"]) == list(deep.values[f"{name}@40"])
    assert all(
        math.isclose(a * 10**12, b * 40)
        for a, b in zip(
            huge.values[f"precision@{10**12}"], deep.values["precision@40"], strict=True
        )
    )


HUGE = {
    "a 20 MB query": lambda: json.dumps(
        {"id": "q", "query": "x" * 20_000_000, "relevant": ["d:0"]}
    ),
    "a million brackets": lambda: "[" * 1_000_000,
    "a million-digit id": lambda: '{"id": ' + "7" * 1_000_000 + "}",
    "a million fields": lambda: " ".join(["q1"] * 1_000_000),
}


@pytest.mark.parametrize("what", HUGE)
@pytest.mark.parametrize("reader", [load_golden, load_corpus, read_qrels, read_run])
def test_huge_lines_fail_fast_with_file_and_line(tmp_path, what, reader):
    path = tmp_path / "huge.jsonl"
    path.write_text(HUGE[what]() + "\n")
    result, err = attempt(reader, path)
    if err is not None:
        assert_reported(err, path)
    else:  # only the 20 MB query is valid, for the golden set
        assert reader is load_golden and what == "a 20 MB query" and len(result.queries) == 1


def run_cli(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), no_hang():
        code = main(list(argv))
    return code, err.getvalue()


def test_the_cli_turns_hostile_files_into_one_line_and_exit_2(tmp_path, mini):
    golden, qrels, run = tmp_path / "g.jsonl", tmp_path / "q.txt", tmp_path / "r.txt"
    golden.write_bytes(b'{"id": "q1", "query": "x", "relevant": {"d:0": NaN}}\n')
    qrels.write_bytes(b"\xef\xbb\xbfq1 0 d1 1\nq1 0 d2 " + b"9" * 40 + b"\n")
    run.write_bytes(b"q1 Q0 d1 1 1.5 t\nq1 Q0 d2 2 inf t\n")
    cases = [
        (
            ["golden", "validate", str(golden), "--corpus", str(mini / "corpus")],
            f"{golden}:1: malformed JSON: NaN",
        ),
        (["score", str(qrels), str(run)], f"{qrels}:2: relevance grade"),
        (["score", str(qrels).replace("q.txt", "none.txt"), str(run)], "cannot read the file"),
        (["score", str(mini / "golden.jsonl"), str(run), "--k", "²"], "--k takes comma-separated"),
    ]
    for argv, expect in cases:
        code, stderr = run_cli(*argv)
        assert code == 2 and expect in stderr and "Traceback" not in stderr, (argv, stderr)
        if argv[0] == "golden":  # validate lists every bad line, then counts them
            assert stderr.startswith(expect) and stderr.count("\n") == 2
            assert stderr.endswith("rageval: 1 of 1 queries have problems\n")
            continue
        assert stderr.startswith("rageval: error: ") and stderr.count("\n") == 1
    qrels.write_bytes(b"\xef\xbb\xbfq1 0 d1 1\n")  # the byte-order mark is not part of "q1"
    run.write_bytes(b"q1 Q0 d1 1 1.5 t\n")
    assert run_cli("score", str(qrels), str(run), "--k", "1000000000")[0] == 0
    assert read_qrels(qrels) == {"q1": {"d1": 1}}
