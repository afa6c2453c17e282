"""``backend=pgvector``: retrieval in PostgreSQL with the pgvector extension
(docs/backends-pgvector.md).

Where: a team's server, its DSN read from the environment variable ``dsn_env`` names (never from
config, never printed: the password is masked in every message), or, when that variable is
unset, an embedded server for the run (rageval.retrieval.pgvector.server).

What: a throwaway table per run (``rageval_<16 hex>``, named from the run's chunks, model and
settings; bulk-loaded with binary COPY; dropped at the end unless ``keep_table``), or a team's
``existing`` table (``table``, with ``id_column``, ``text_column``, ``vector_column`` and
optionally ``doc_id_column``, whose passages are then scored on their text). Vectors are stored
as ``vector`` or ``halfvec`` (``storage``) and searched by inner product (rageval's encoders
normalise, so this is cosine similarity):

- ``index_type=exact``: no index, an exact scan (the parity reference);
- ``hnsw`` (``m``, ``ef_construction``; ``ef_search`` at query time);
- ``ivfflat`` (``lists``, default rows / 1000 as pgvector advises, at least 1; ``probes``).

Search modes: ``vector``; ``bm25`` through PostgreSQL full-text search (a ``tsvector`` column in
the text search configuration ``text_config``, ranked by ``ts_rank_cd`` with the query's words
OR-ed); ``hybrid`` as reciprocal rank fusion of the two in one SQL statement, as a team would ship
it. A batch of queries goes to the server in one pipeline. Ties are ordered by id descending,
rageval's one tie rule.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from rageval.errors import BackendError, ConfigError, IndexMismatchError, install_hint
from rageval.formats.redact import scrub, secret_from_env
from rageval.retrieval.base import Encoder
from rageval.types import Chunk, RankedList

log = logging.getLogger("rageval")
MODES = ("vector", "bm25", "hybrid")
INDEX_TYPES = ("exact", "hnsw", "ivfflat")
STORAGE = ("vector", "halfvec")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
INSTALL_HINT = install_hint("pgvector")


def _mask(text: str, dsn: str | None) -> str:
    """A DSN or error text with any password replaced by ``***`` (rageval.formats.redact: URL and
    keyword forms; the parts of ``dsn``'s password a driver's error may carry, such as the tail
    after an ``@`` it took for the host)."""
    from rageval.formats.redact import secret_values

    return scrub(text, secret_values(None, {"dsn": dsn}) if dsn else set())


def _choice_checks(
    mode: str,
    index_type: str,
    storage: str,
    existing: bool,
    table: str | None,
    doc_id_column: str | None,
) -> list[tuple[bool, str]]:
    """(ok, message) of the settings chosen from a list, and of an existing table's: named,
    and the only kind with a document id column."""
    return [
        (mode in MODES, f"mode must be one of {', '.join(MODES)}, got {mode!r}"),
        (
            index_type in INDEX_TYPES,
            f"backend.pgvector.index_type must be one of {', '.join(INDEX_TYPES)}, "
            f"got {index_type!r}",
        ),
        (
            storage in STORAGE,
            f"backend.pgvector.storage must be vector or halfvec, got {storage!r}",
        ),
        (not existing or bool(table), "existing=true needs table: the table to query"),
        (
            doc_id_column is None or existing,
            "doc_id_column is for an existing table (existing=true)",
        ),
    ]


def _number_checks(
    m: int, ef_construction: int, ef_search: int, probes: int, rrf_k: int, lists: int | None
) -> list[tuple[bool, str]]:
    """(ok, message) of the index's and the search's whole-number settings."""
    checks = []
    for name, value in (("m", m), ("ef_construction", ef_construction)):
        checks.append((_whole(value, 2), f"backend.pgvector.{name} must be a whole number >= 2"))
    for name, value in (("ef_search", ef_search), ("probes", probes), ("rrf_k", rrf_k)):
        checks.append((_whole(value, 1), f"backend.pgvector.{name} must be a whole number >= 1"))
    checks.append(
        (lists is None or _whole(lists, 1), "backend.pgvector.lists must be >= 1 or null")
    )
    return checks


def _name_checks(**names: str | None) -> list[tuple[bool, str]]:
    """(ok, message) of the SQL names given (None: not given), in the order given."""
    return [
        (bool(_NAME.match(value)), f"{name} {value!r} is not a legal name")
        for name, value in names.items()
        if value is not None
    ]


class PgVectorRetriever:
    """pgvector retrieval (see the module docstring)."""

    def __init__(
        self,
        mode: str = "vector",
        dsn_env: str = "RAGEVAL_PG_DSN",
        cache_dir: str | None = None,
        table: str | None = None,
        existing: bool = False,
        keep_table: bool = False,
        id_column: str = "id",
        text_column: str = "body",
        vector_column: str = "embedding",
        doc_id_column: str | None = None,
        index_type: str = "exact",
        m: int = 16,
        ef_construction: int = 64,
        ef_search: int = 40,
        lists: int | None = None,
        probes: int = 1,
        storage: str = "vector",
        text_config: str = "english",
        rrf_k: int = 60,
        candidate_depth: int | None = None,
        run_key: str = "",
    ):
        checks = [
            *_choice_checks(mode, index_type, storage, existing, table, doc_id_column),
            *_number_checks(m, ef_construction, ef_search, probes, rrf_k, lists),
            *_name_checks(
                table=table,
                id_column=id_column,
                text_column=text_column,
                vector_column=vector_column,
                doc_id_column=doc_id_column,
                text_config=text_config,
            ),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message, path="backend (pgvector)")
        self.mode, self.dsn_env, self.cache_dir = mode, dsn_env, cache_dir
        self.table, self.existing, self.keep_table = table, existing, keep_table
        self.id_column, self.text_column = id_column, text_column
        self.vector_column, self.doc_id_column = vector_column, doc_id_column
        self.index_type, self.m, self.ef_construction = index_type, m, ef_construction
        self.ef_search, self.lists, self.probes = ef_search, lists, probes
        self.storage, self.text_config, self.rrf_k = storage, text_config, rrf_k
        self.candidate_depth, self.run_key = candidate_depth, run_key
        self.external = doc_id_column is not None
        self.requests = {"index": 0, "search": 0}
        self.build_seconds = 0.0
        self._conn: Any = None
        self._server: Any = None
        self._encoder: Encoder | None = None
        self._created = False
        self._rows = 0

    def __repr__(self) -> str:
        return (
            f"PgVectorRetriever(mode={self.mode!r}, index_type={self.index_type!r}, "
            f"table={self.table!r})"
        )

    def approximate(self) -> bool:
        """HNSW or IVFFlat, or a team's table (whose index rageval does not build): ann_recall@k
        is measured against a flat pass over the same vectors."""
        return self.existing or self.index_type != "exact"

    # -- connection ----------------------------------------------------------------------------
    def _connect(self) -> Any:
        if self._conn is not None:
            return self._conn
        try:
            import psycopg
            from pgvector.psycopg import register_vector
        except ImportError:
            raise ConfigError(
                f"backend=pgvector needs psycopg and pgvector: {INSTALL_HINT}"
            ) from None
        secret = secret_from_env(self.dsn_env)  # prints masked: unwrapped for the driver only
        dsn = secret.reveal() if secret else None
        if not dsn:
            from rageval.retrieval.pgvector.server import EmbeddedPostgres

            if not self.cache_dir:
                raise ConfigError("backend.cache_dir is needed for the embedded PostgreSQL")
            self._server = EmbeddedPostgres(self.cache_dir)
            dsn = self._server.start()
        try:
            conn = psycopg.connect(dsn, autocommit=True)
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(conn)
        except psycopg.Error as err:
            raise BackendError(
                f"cannot connect to PostgreSQL ({_mask(str(err), dsn).strip()}); check the DSN in "
                f"${self.dsn_env} and that the vector extension is installed"
            ) from None
        self._conn = conn
        return conn

    def _dsn(self) -> str | None:
        return os.environ.get(self.dsn_env) if self.dsn_env else None

    @property
    def _vector_type(self) -> str:
        return self.storage

    @property
    def _ops(self) -> str:
        return f"{self.storage}_ip_ops"

    # -- index -------------------------------------------------------------------------------
    def index(self, chunks: Sequence[Chunk], encoder: Encoder | None) -> None:
        """Load ``chunks`` (their embeddings through ``encoder``) into a throwaway table and
        build its index; with ``existing``, check the team's table instead."""
        if self.mode != "bm25":
            if encoder is None:
                raise ConfigError(f"pgvector mode {self.mode!r} needs an embedding model")
            self._encoder = encoder
        conn = self._connect()
        t = time.perf_counter()
        if self.existing:
            self._check_existing()
        else:
            self._load(conn, chunks, encoder)
        self.build_seconds = time.perf_counter() - t

    def _name_for(self, chunks: Sequence[Chunk], encoder: Encoder | None) -> str:
        h = hashlib.sha256()
        for c in chunks:
            h.update(c.id.encode())
        h.update(str(getattr(encoder, "fingerprint", "")).encode())
        h.update(
            f"{self.mode}|{self.index_type}|{self.m}|{self.ef_construction}|{self.lists}".encode()
        )
        h.update(f"{self.storage}|{self.text_config}|{self.run_key}|{os.getpid()}".encode())
        return f"rageval_{h.hexdigest()[:16]}"

    def _load(self, conn: Any, chunks: Sequence[Chunk], encoder: Encoder | None) -> None:
        from pgvector import HalfVector, Vector

        self.table = self.table or self._name_for(chunks, encoder)
        self.id_column, self.text_column, self.vector_column = "id", "body", "embedding"
        vectors = None
        dim = 0
        if self.mode != "bm25" and encoder is not None:
            vectors = np.asarray(encoder.encode_documents([c.text for c in chunks]), np.float32)
            dim = int(vectors.shape[1])
        wrap = HalfVector if self.storage == "halfvec" else Vector
        columns = "id text PRIMARY KEY, doc_id text NOT NULL, body text NOT NULL"
        if vectors is not None:
            columns += f", embedding {self._vector_type}({dim})"
        if self.mode != "vector":
            tsv = f"to_tsvector('{self.text_config}', body)"
            columns += f", tsv tsvector GENERATED ALWAYS AS ({tsv}) STORED"
        conn.execute(f"DROP TABLE IF EXISTS {self.table}")
        conn.execute(f"CREATE TABLE {self.table} ({columns})")
        self._created = True
        names = ["id", "doc_id", "body"] + (["embedding"] if vectors is not None else [])
        types = ["text", "text", "text"] + ([self._vector_type] if vectors is not None else [])
        with conn.cursor() as cur:
            sql = f"COPY {self.table} ({', '.join(names)}) FROM STDIN WITH (FORMAT BINARY)"
            with cur.copy(sql) as copy:
                copy.set_types(types)
                for i, c in enumerate(chunks):
                    row = [c.id, c.doc_id, c.text]
                    if vectors is not None:
                        row.append(wrap(vectors[i]))
                    copy.write_row(row)
        self.requests["index"] += 1
        self._rows = len(chunks)
        if vectors is not None and self.index_type == "hnsw":
            conn.execute(
                f"CREATE INDEX ON {self.table} USING hnsw (embedding {self._ops}) "
                f"WITH (m = {int(self.m)}, ef_construction = {int(self.ef_construction)})"
            )
        elif vectors is not None and self.index_type == "ivfflat":
            conn.execute(
                f"CREATE INDEX ON {self.table} USING ivfflat (embedding {self._ops}) "
                f"WITH (lists = {self.ivf_lists})"
            )
        if self.mode != "vector":
            conn.execute(f"CREATE INDEX ON {self.table} USING gin (tsv)")
        conn.execute(f"ANALYZE {self.table}")

    @property
    def ivf_lists(self) -> int:
        """IVFFlat lists: ``lists``, else rows / 1000 (pgvector's advice), at least 1."""
        return int(self.lists or max(1, self._rows // 1000))

    def _check_existing(self) -> None:
        conn = self._conn
        rows = conn.execute(
            "SELECT column_name, udt_name FROM information_schema.columns WHERE table_name = %s",
            (self.table,),
        ).fetchall()
        have = {name: udt for name, udt in rows}
        if not have:
            raise ConfigError(
                f"table {self.table!r} does not exist; fix backend.table, or set existing=false "
                "to load the run's chunks into a throwaway table"
            )
        need = [self.id_column]
        need += [self.text_column] if self.mode != "vector" or self.doc_id_column else []
        need += [self.vector_column] if self.mode != "bm25" else []
        need += [self.doc_id_column] if self.doc_id_column else []
        missing = [c for c in need if c not in have]
        if missing:
            raise ConfigError(
                f"table {self.table!r} has no column {missing[0]!r} (its columns: "
                f"{', '.join(sorted(have))}); set id_column / text_column / vector_column / "
                "doc_id_column to its names"
            )
        if self.mode != "bm25":
            kind = have[self.vector_column]
            if kind not in STORAGE:
                raise ConfigError(f"column {self.vector_column!r} is a {kind}, not vector/halfvec")
            self.storage = kind
            dim = conn.execute(
                f"SELECT vector_dims({self.vector_column}::vector) FROM {self.table} LIMIT 1"
            ).fetchone()
            want = getattr(self._encoder, "dim", None)
            if dim and want and int(dim[0]) != int(want):
                raise IndexMismatchError(
                    f"table {self.table!r} holds {dim[0]}-d vectors in {self.vector_column!r} but "
                    f"the encoder makes {want}-d ones: the table was built with another model"
                )
        self._rows = int(conn.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0])

    # -- search ------------------------------------------------------------------------------
    def _tsquery(self) -> str:
        # the query's words OR-ed (plainto_tsquery ANDs them, too strict for questions)
        return (
            f"to_tsquery('{self.text_config}', "
            f"replace(plainto_tsquery('{self.text_config}', %(q)s)::text, ' & ', ' | '))"
        )

    def _sql(self, depth: int) -> str:
        t, i, v = self.table, self.id_column, self.vector_column
        cast = f"%(v)s::{self._vector_type}"
        tsv = (
            "tsv" if not self.existing else f"to_tsvector('{self.text_config}', {self.text_column})"
        )
        if self.mode == "vector":
            return (
                f"SELECT {i}::text AS id, -({v} <#> {cast}) AS score FROM {t} "
                f"ORDER BY {v} <#> {cast}, {i} DESC LIMIT {int(depth)}"
            )
        if self.mode == "bm25":
            return (
                f"SELECT {i}::text AS id, ts_rank_cd({tsv}, q) AS score FROM {t}, "
                f"{self._tsquery()} q WHERE {tsv} @@ q ORDER BY score DESC, {i} DESC "
                f"LIMIT {int(depth)}"
            )
        cand = int(self.candidate_depth or max(depth, 100))
        return (
            f"WITH dense AS (SELECT id, row_number() OVER (ORDER BY dist, id DESC) AS r FROM "
            f"(SELECT {i}::text AS id, {v} <#> {cast} AS dist FROM {t} ORDER BY {v} <#> {cast} "
            f"LIMIT {cand}) d), "
            f"lex AS (SELECT id, row_number() OVER (ORDER BY rank DESC, id DESC) AS r FROM "
            f"(SELECT {i}::text AS id, ts_rank_cd({tsv}, q) AS rank FROM {t}, {self._tsquery()} q "
            f"WHERE {tsv} @@ q ORDER BY rank DESC LIMIT {cand}) l) "
            f"SELECT coalesce(dense.id, lex.id) AS id, "
            f"coalesce(1.0 / ({int(self.rrf_k)} + dense.r), 0) + "
            f"coalesce(1.0 / ({int(self.rrf_k)} + lex.r), 0) AS score "
            f"FROM dense FULL OUTER JOIN lex ON dense.id = lex.id "
            f"ORDER BY score DESC, id DESC LIMIT {int(depth)}"
        )

    def search(self, queries: Sequence[str], depth: int) -> list[Any]:
        """Top ``depth`` per query (passages with text when ``doc_id_column`` is set)."""
        import psycopg
        from pgvector import HalfVector, Vector

        queries = list(queries)
        if not queries:
            return []
        conn = self._connect()
        if self.index_type == "hnsw" or self.existing:
            conn.execute(f"SET hnsw.ef_search = {int(self.ef_search)}")
        if self.index_type == "ivfflat" or self.existing:
            conn.execute(f"SET ivfflat.probes = {int(self.probes)}")
        if self.index_type != "exact":
            # the index is what is measured: a small table would otherwise be scanned exactly
            # (a team's table: index_type=hnsw|ivfflat says it has such an index to measure)
            conn.execute("SET enable_seqscan = off")
        params: list[dict[str, Any]] = [{"q": q} for q in queries]
        if self.mode != "bm25":
            wrap = HalfVector if self.storage == "halfvec" else Vector
            vecs = np.asarray(self._encoder.encode_queries(queries), np.float32)  # type: ignore[union-attr]
            for p, vec in zip(params, vecs, strict=True):
                p["v"] = wrap(vec)
        sql = self._sql(depth)
        out: list[list[tuple[str, float]]] = []
        try:
            with conn.cursor() as cur:
                cur.executemany(sql, params, returning=True)
                while True:
                    out.append([(str(r[0]), float(r[1])) for r in cur.fetchall()])
                    if not cur.nextset():
                        break
        except psycopg.Error as err:
            why = _mask(str(err), self._dsn()).strip()
            raise BackendError(
                f"PostgreSQL failed the search on {self.table!r}: {why}",
                failed_queries=queries,
            ) from None
        self.requests["search"] += len(queries)
        if self.doc_id_column:
            return self._passages(out)
        return [RankedList(tuple(i for i, _ in r), tuple(s for _, s in r)) for r in out]

    def exact_search(self, queries: Sequence[str], depth: int) -> list[RankedList] | None:
        """The exact top ``depth`` of a team's table (an index-free scan of its own vectors),
        the reference of ann_recall@k; None for a throwaway table, whose vectors rageval holds
        (a flat FAISS pass over them is the reference then)."""
        if not self.existing or self.mode != "vector":
            return None
        conn = self._connect()
        kind, self.index_type = self.index_type, "exact"
        conn.execute("SET enable_indexscan = off")
        conn.execute("SET enable_seqscan = on")
        try:
            got = self.search(queries, depth)
        finally:
            self.index_type = kind
            conn.execute("RESET enable_indexscan")
        return [
            r
            if isinstance(r, RankedList)
            else RankedList(tuple(p.id for p in r), tuple(p.score for p in r))
            for r in got
        ]

    def _passages(self, results: list[list[tuple[str, float]]]) -> list[list[Any]]:
        from rageval.retrieval.passages import Passage

        ids = sorted({i for r in results for i, _ in r})
        rows = self._conn.execute(
            f"SELECT {self.id_column}::text, {self.doc_id_column}::text, {self.text_column} "
            f"FROM {self.table} WHERE {self.id_column}::text = ANY(%s)",
            (ids,),
        ).fetchall()
        by_id = {r[0]: (r[1] or "", r[2] or "") for r in rows}
        return [[Passage(i, *by_id.get(i, ("", "")), score=s) for i, s in r] for r in results]

    # -- costs and clean-up ------------------------------------------------------------------
    def index_bytes(self) -> dict[str, int | None]:
        """The table's size with its indexes on the server (``pg_total_relation_size``)."""
        if self._conn is None or not self.table:
            return {}
        (total,) = self._conn.execute(f"SELECT pg_total_relation_size('{self.table}')").fetchone()
        return {"disk": int(total), "memory": None}

    def request_counts(self) -> dict[str, int]:
        return dict(self.requests)

    def close(self) -> None:
        """Drop the throwaway table (unless ``keep_table``), close, stop an embedded server."""
        conn, self._conn = self._conn, None
        if conn is not None:
            if self._created and not self.keep_table:
                try:
                    conn.execute(f"DROP TABLE IF EXISTS {self.table}")
                except Exception as exc:
                    log.warning(
                        "pgvector: could not drop %s: %s", self.table, _mask(str(exc), self._dsn())
                    )
            conn.close()
        server, self._server = self._server, None
        if server is not None:
            server.stop()

    def __enter__(self) -> PgVectorRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def pgvector_retriever(pgvector: dict[str, Any] | None = None, **options: Any) -> PgVectorRetriever:
    """``conf/backend/pgvector.yaml``'s target: the index settings under ``backend.pgvector``
    (``backend.pgvector.index_type=hnsw``, as ``backend.faiss.*`` is spelled), the rest flat."""
    return PgVectorRetriever(**options, **(pgvector or {}))


def _whole(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low
