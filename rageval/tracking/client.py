"""The MLflow client, its tracking URI, the experiment, and the git facts a run records."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# MLflow 3 opens an experiment on the view its kind names; without the tag it guesses from the
# runs' contents and often lands on the GenAI traces overview ("Traces 0"). rageval logs runs of
# a retrieval model under evaluation: the "custom model development" view lists them.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"

# MLflow retries a request 7 times with a backoff factor of 2 by default: four minutes before an
# unreachable server counts as down. rageval keeps the report on disk and says how to log it
# later, so it gives up sooner; the user's own settings of these variables win.
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}


def tracking_uri(configured: str | None) -> str:
    """Config, else $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db at the project root (the
    working directory outside a project)."""
    if configured:
        return str(configured)
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    from rageval.project import output_root

    return f"sqlite:///{output_root() / 'mlflow.db'}"


def client_for(uri: str, *, lookup: bool = False):
    """An MlflowClient for ``uri`` (telemetry off, fewer HTTP retries unless the user set them).
    ``lookup``: the caller only reads runs, so a local SQLite store that does not exist is an
    InputError naming its file, not a new empty database (MLflow would create one, with its
    tables, in the working directory)."""
    db = sqlite_file(uri)
    if lookup and db is not None and not db.exists():
        from rageval.errors import InputError

        raise InputError(
            f"no MLflow tracking store at {db} (nothing has been logged there); run from the "
            "project that logged the run, or pass --tracking-uri"
        )
    # rageval is offline by default: no usage telemetry unless the user turns it back on
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow.tracking import MlflowClient

    for name, value in HTTP_DEFAULTS.items():
        os.environ.setdefault(name, value)
    return MlflowClient(tracking_uri=uri)


def sqlite_file(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (an MLflow store, an Optuna storage), without
    its query; None for any other kind of store."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri[len("sqlite:///") :].split("?", 1)[0])


def ensure_experiment(client, name: str) -> str:
    """The experiment's id, creating it if needed (tolerates a concurrent creator); tags its kind
    so the MLflow UI opens it on its runs."""
    exp = client.get_experiment_by_name(name)
    if exp is None:
        try:
            exp_id = client.create_experiment(
                name,
                artifact_location=_artifact_location(client, name),
                tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND},
            )
        except Exception:
            exp = client.get_experiment_by_name(name)
            if exp is None:
                raise
        else:
            return exp_id
    if EXPERIMENT_KIND_TAG not in (exp.tags or {}):  # an experiment made by an older rageval
        client.set_experiment_tag(exp.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
    return exp.experiment_id


def _artifact_location(client, name: str) -> str | None:
    """Artifacts of a new experiment in a local SQLite store: ``mlruns/`` beside the database.
    MLflow's default is ``./mlruns`` in the working directory, which for a command run from a
    subfolder (the corpus) would write into that folder. None (MLflow's default) elsewhere."""
    import re

    db = sqlite_file(str(client.tracking_uri))
    if db is None:
        return None
    folder = db.parent
    if folder.resolve() == Path.cwd().resolve():
        return None  # MLflow's own layout, mlruns/<experiment id>
    return str(folder / "mlruns" / (re.sub(r"[^\w.-]+", "_", name) or "experiment"))


def _git(args: list[str], cwd) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10
    ).stdout.strip()


def git_info(cwd: str | Path | None = None) -> dict[str, str]:
    """Commit, dirty flag, branch and remote URL of the repository holding ``cwd`` (empty outside
    a git repository)."""
    try:
        commit = _git(["rev-parse", "HEAD"], cwd)
        if not commit:
            return {}
        dirty = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
        info = {"git_commit": commit, "git_dirty": "true" if dirty else "false"}
        branch = _git(["rev-parse", "--abbrev-ref", "HEAD"], cwd)
        if branch and branch != "HEAD":
            info["git_branch"] = branch
        remote = _git(["config", "--get", "remote.origin.url"], cwd)
        if remote:
            info["git_remote"] = remote
        return info
    except (OSError, subprocess.SubprocessError):
        return {}


def source_tags(git: dict[str, str], entry_point: str = "rageval") -> dict[str, str]:
    """MLflow's own source tags (the UI's Source column, the commit link), from :func:`git_info`.
    Credentials in a remote URL (``https://user:token@host``) are left out."""
    import re

    tags = {"mlflow.source.type": "LOCAL", "mlflow.source.name": entry_point}
    if git.get("git_commit"):
        tags["mlflow.source.git.commit"] = git["git_commit"]
    if git.get("git_branch"):
        tags["mlflow.source.git.branch"] = git["git_branch"]
    if git.get("git_remote"):
        tags["mlflow.source.git.repoURL"] = re.sub(r"//[^/@]*@", "//", git["git_remote"])
    return tags
