"""The Hydra app: compose conf/, build every component, evaluate, write report.json, log to MLflow.

``run_job(cfg)`` is the plain function behind ``@hydra.main``: tests call it with a composed config.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import warnings
from pathlib import Path
from typing import Any

from rageval.errors import ConfigError, RagevalError
from rageval.redact import (
    ScrubbingStream,
    override_secrets,
    redact,
    redact_override,
    scrub,
    scrub_logging,
    secret_values,
)

ROOT = Path(__file__).resolve().parents[2]
CONF_DIR = ROOT / "conf"
GROUPS = ("dataset", "embedding", "backend", "search", "rerank")


def default_cache_dir() -> str:
    return os.environ.get("RAGEVAL_CACHE_DIR") or str(Path.home() / ".cache" / "rageval")


def register_resolvers() -> None:
    from omegaconf import OmegaConf

    OmegaConf.register_new_resolver("rageval_root", lambda: str(ROOT), replace=True)
    OmegaConf.register_new_resolver("rageval_cache_dir", default_cache_dir, replace=True)


def _instantiate(node: dict, what: str, **kwargs):
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    try:
        return instantiate(node, _convert_="all", **kwargs)
    except InstantiationException as err:
        cause = err.__cause__ or err
        if isinstance(cause, RagevalError):
            raise cause from None
        raise ConfigError(f"cannot build {what} from {node.get('_target_')!r}: {cause}") from None


def build(cfg) -> tuple[Any, Any, Any, Any]:
    """RunSpec, encoder, query encoder (or None) and retriever; fails fast on config mistakes."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from rageval.chunking import ChunkingSpec
    from rageval.pipeline import RunSpec
    from rageval.retrieval.retry import RetryingRetriever

    try:
        c = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as err:
        raise ConfigError(
            f"{err.__class__.__name__}: {str(err).splitlines()[0]} (key {getattr(err, 'full_key', '?')})"
        ) from None
    for key in ("chunk", "chunk_overlap", "k"):
        if not isinstance(c.get(key), int) or isinstance(c.get(key), bool):
            raise ConfigError(f"{key} must be an integer, got {c.get(key)!r}")
    emb = dict(c["embedding"])
    query = {k: emb.pop(f"query_{k}", None) for k in ("model", "backend", "quantize")}
    query = {k: v for k, v in query.items() if v is not None}
    encoder = _instantiate(emb, "embedding")
    query_encoder = _instantiate({**emb, **query}, "embedding.query_model") if query else None
    retriever = _instantiate(c["backend"], "backend")
    retries, backoff = c.get("retries", 2), c.get("retry_backoff", 0.5)
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise ConfigError(f"retries must be an integer >= 0, got {retries!r}")
    if not isinstance(backoff, int | float) or isinstance(backoff, bool) or backoff < 0:
        raise ConfigError(f"retry_backoff must be a number of seconds >= 0, got {backoff!r}")
    retriever = RetryingRetriever(retriever, retries, float(backoff))
    rerank = dict(c.get("rerank") or {})
    if rerank.pop("enabled", False):
        retriever = _instantiate(rerank, "rerank", base=retriever)
    from rageval.embedding.base import tokenizer_dir_of

    tokenizer_dir = tokenizer_dir_of(encoder)
    ds = c["dataset"]
    if ds.get("format") == "beir":
        from rageval.inputs.beir import beir_dataset

        corpus, golden = beir_dataset(ds["path"], ds.get("split", "test"))
    else:
        corpus, golden = str(Path(ds["corpus"]).expanduser()), str(Path(ds["golden"]).expanduser())
    spec = RunSpec(
        corpus=corpus,
        golden=golden,
        tokenizer_dir=str(tokenizer_dir),
        chunking=ChunkingSpec(c["chunk"], c["chunk_overlap"]),
        k=c["k"],
        ks=tuple(c["ks"]),
        level=c.get("level", "auto"),
        depth=c.get("depth"),
        latency_sample=c.get("latency_sample", 20),
        query_batch=c.get("query_batch", 10_000),
        allow_model_mismatch=bool(c.get("allow_model_mismatch", False)),
    )
    return spec, encoder, query_encoder, retriever


def run_job(cfg, output_dir: str | Path, overrides: list[str] | None = None,
            choices: dict[str, str] | None = None, sweep_dir: str | None = None, quiet: bool = False):  # fmt: skip
    """Evaluate one composed config; writes report.json (+ TREC files) and logs to MLflow."""
    import yaml
    from omegaconf import OmegaConf

    from rageval.formats.atomic import atomic_write_text
    from rageval.formats.trec import write_qrels, write_run
    from rageval.pipeline import evaluate

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec, encoder, query_encoder, retriever = build(cfg)
    config = OmegaConf.to_container(cfg, resolve=True)
    try:
        report = evaluate(spec, retriever, encoder, query_encoder, config=redact(config))
    finally:
        for part in (retriever, encoder, query_encoder):
            close = getattr(part, "close", None)
            if callable(close):
                close()
    report.overrides = list(overrides or [])
    report.choices = dict(choices or {})
    qids = [r["id"] for r in report.per_query]
    write_run(out / "run.trec", qids, report.rankings, tag="rageval")
    write_qrels(out / "qrels.trec", report.qrels)
    report.write_json(out / "report.json")
    atomic_write_text(out / "config.yaml", yaml.safe_dump(redact(config), sort_keys=False))
    if cfg.mlflow.enabled:
        from rageval.app.sweep import parent_run_id
        from rageval.tracking.runs import log_run, tracking_uri

        uri = tracking_uri(cfg.mlflow.tracking_uri)
        try:
            log_run(report, config=config, choices=choices or {}, output_dir=out, uri=uri,
                    experiment=cfg.mlflow.experiment, run_name=cfg.mlflow.run_name,
                    parent_run_id=parent_run_id(sweep_dir, uri, cfg.mlflow.experiment),
                    sweep_id=sweep_dir)  # fmt: skip
        except Exception as err:  # the report is safe on disk; say how to log it later
            secrets = secret_values(config)
            shown, q = scrub(uri, secrets), shlex.quote
            warnings.warn(
                f"MLflow logging to {shown} failed ({err.__class__.__name__}: "
                f"{scrub(str(err), secrets)[:300]}); the report is at {out / 'report.json'}; "
                f"log it later with: rageval log {q(str(out))} --tracking-uri {q(shown)} "
                f"--experiment {q(str(cfg.mlflow.experiment))}",
                stacklevel=1,
            )
    if not quiet:
        print(report.table())
        print(f"report: {out / 'report.json'}")
    return report


def _hydra_task(cfg) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    register_resolvers()  # a Ray or joblib worker process has not run run_app
    hc = HydraConfig.get()
    secrets = secret_values(OmegaConf.to_container(cfg, resolve=False))
    scrub_logging(secrets | override_secrets(hc.overrides.task))  # the console and the .log file
    overrides = [redact_override(o) for o in hc.overrides.task]
    multirun = hc.mode == RunMode.MULTIRUN
    sweep_dir = str(hc.sweep.dir) if multirun else None
    choices = {g: str(hc.runtime.choices.get(g)) for g in GROUPS if hc.runtime.choices.get(g)}
    out = Path(hc.runtime.output_dir)
    if multirun:
        _enter_launch_dir(str(hc.runtime.cwd))
    try:
        run_job(cfg, out, overrides, choices, sweep_dir)
    except RagevalError as err:
        msg = scrub(str(err), secret_values(OmegaConf.to_container(cfg, resolve=False)))
        print(f"rageval: error: {msg}", file=sys.stderr)
        _write_error(out, msg, overrides)
        if not multirun:
            sys.exit(err.exit_code)
    except Exception as err:
        if not multirun:
            raise
        # One job's bug or crash must not end the sweep: the others run on, the summary says why.
        import traceback

        secrets = secret_values(OmegaConf.to_container(cfg, resolve=False))
        print(scrub(traceback.format_exc(), secrets), file=sys.stderr)
        _write_error(out, scrub(f"{type(err).__name__}: {err}", secrets), overrides)


def _write_error(out: Path, msg: str, overrides: list[str]) -> None:
    import socket

    from rageval.formats.atomic import atomic_write_text

    atomic_write_text(out / "error.json", json.dumps({"error": msg, "overrides": overrides,
                                                     "host": socket.gethostname()}))  # fmt: skip


def _enter_launch_dir(cwd: str) -> None:
    """Run a sweep job in the folder the sweep was launched from, as a local job does: a worker of
    a Ray cluster starts where the cluster was started, and relative paths (corpus, golden set,
    ./mlflow.db) would point elsewhere. Skipped on a node that does not have that folder."""
    if cwd and os.path.isdir(cwd) and os.path.abspath(os.getcwd()) != os.path.abspath(cwd):
        os.chdir(cwd)


def run_app(argv: list[str]) -> int:
    """Run the Hydra app with ``argv`` as its command line; returns the exit code."""
    import hydra

    from rageval.app.sweep import LAST_SWEEP

    register_resolvers()
    LAST_SWEEP.update(failed=0, exit_code=0, pending=None)
    main = hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")(
        _hydra_task
    )
    saved = sys.argv, sys.stdout, sys.stderr
    sys.argv = ["rageval", *argv]
    # Hydra echoes overrides in its own errors (and --cfg prints the config): mask secrets there
    secrets = override_secrets(argv) | secret_values()
    sys.stdout, sys.stderr = (
        ScrubbingStream(sys.stdout, secrets),
        ScrubbingStream(sys.stderr, secrets),
    )
    try:
        main()
    except BaseException as exc:
        # The launcher itself failed mid-sweep (a worker died, the cluster went away): summarise
        # what finished and close the parent run, then exit 2 (or let Ctrl-C through).
        if LAST_SWEEP.get("pending") is None:
            raise
        from rageval.app.sweep import abort_sweep

        abort_sweep(exc)
        if not isinstance(exc, SystemExit):
            raise
    finally:
        sys.argv, sys.stdout, sys.stderr = saved
    return int(LAST_SWEEP["exit_code"])
