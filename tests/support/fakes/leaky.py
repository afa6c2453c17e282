"""A team's own backend that logs, and on request raises, with its credentials in the text."""

from __future__ import annotations

import logging
import os

from rageval.scoring.ranking import ranked

log = logging.getLogger("rageval.test_secrets")


class LeakyRetriever:
    """A team's own backend that logs, and on request raises, with its credentials in the text."""

    fail = False

    def __init__(self, api_token=None, endpoint=None, credentials=None, **_):
        self.token, self.endpoint, self.chunks = api_token, endpoint, []

    def index(self, chunks, encoder):
        self.chunks = [(c.id, set(c.text.lower().split())) for c in chunks]
        log.warning(
            "connected to %s as %s using %s",
            self.endpoint,
            self.token,
            os.environ["RAGEVAL_TEST_SEARCH_KEY"],
        )

    def search(self, queries, depth):
        if self.fail:
            raise ConnectionError(f"{self.endpoint} refused token {self.token}")
        return [
            ranked([(cid, len(set(q.lower().split()) & w)) for cid, w in self.chunks], depth)
            for q in queries
        ]
