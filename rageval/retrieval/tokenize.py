"""BM25 tokenisation shared by the local backend (bm25s) and Qdrant's sparse vectors.

bm25s's regex word split, optional lower-casing, stopword removal and PyStemmer stemming, set up
from the ``search.bm25`` config group, so that both backends see the same tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rageval.errors import ConfigError, install_hint

STEMMER_HINT = f"search.bm25.stemmer needs PyStemmer: {install_hint(package='PyStemmer')}"


def quiet_bm25s() -> None:
    """bm25s sets its logger to DEBUG when imported, so every index build printed a debug line
    into a run's console: rageval shows its warnings only."""
    import logging

    logging.getLogger("bm25s").setLevel(logging.WARNING)


class BM25Tokenizer:
    """Tokenises texts the way bm25s does, with these stopwords, stemmer and lower-casing.

    ``stopwords``: a bm25s language name ("en", "english", ...), a list of words, or empty/None for
    none. ``stemmer``: a PyStemmer language name, or empty/None for no stemming. An unknown stemmer
    raises KeyError here; unknown stopwords raise ValueError on the first call.
    """

    def __init__(
        self, stopwords: str | Sequence[str] | None, stemmer: str | None, lower: bool = True
    ) -> None:
        self.lower = lower
        self.stopwords = stopword_list(stopwords)
        self.stemmer = load_stemmer(stemmer)

    def __call__(self, texts: Sequence[str], return_ids: bool = True) -> Any:
        """bm25s's ``Tokenized`` (ids and vocab) for ``texts``, or with ``return_ids=False``
        each text's list of token strings."""
        import bm25s

        quiet_bm25s()

        return bm25s.tokenize(
            list(texts),
            lower=self.lower,
            stopwords=self.stopwords,
            stemmer=self.stemmer,
            return_ids=return_ids,
            show_progress=False,
        )


def stopword_list(stopwords: str | Sequence[str] | None) -> str | list[str]:
    """``stopwords`` as bm25s takes them: a language name as is, words as a list of str (a
    Hydra ListConfig too), and nothing (None, "", []) as an empty list."""
    if not stopwords:
        return []
    if isinstance(stopwords, str):
        return stopwords
    return [str(word) for word in stopwords]


def load_stemmer(language: str | None) -> Any:
    """A PyStemmer stemmer for ``language``, or None for no stemming. ConfigError with the
    install hint when PyStemmer is missing; KeyError for a language it does not know."""
    if not language:
        return None
    try:
        import Stemmer
    except ImportError:
        raise ConfigError(STEMMER_HINT) from None
    return Stemmer.Stemmer(language)
