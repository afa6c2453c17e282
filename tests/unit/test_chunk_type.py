import copy
import dataclasses
import pickle

import pytest

from rageval.types import Chunk, ChunkTexts

DOC = "alpha beta gamma delta"


def test_a_chunk_of_a_document_equals_one_holding_its_own_text():
    own = Chunk("c1", "d", 1, "beta gamma", 6, 16, 2)
    cut = Chunk.of_document("c1", "d", 1, DOC, 6, 16, 2)
    assert cut.text == "beta gamma" and cut.label == "d:1"
    assert cut == own and hash(cut) == hash(own) and {own, cut} == {own}
    assert repr(cut) == repr(own)
    assert cut != Chunk.of_document("c1", "d", 1, DOC, 6, 11, 2)
    assert own != Chunk("c1", "d", 1, "beta gamma", 6, 16, 3)


def test_chunks_are_frozen_and_pickle_with_their_own_text_only():
    cut = Chunk.of_document("c1", "d", 1, DOC * 1000, 6, 16, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cut.text = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cut.start = 0  # type: ignore[misc]
    data = pickle.dumps(cut)
    assert len(data) < 200  # the slice travels, not the document
    back = pickle.loads(data)
    assert back == cut and back.text == "beta gamma" and back.end == 16
    assert copy.deepcopy(cut) == cut


def test_chunk_texts_reads_each_text_when_asked():
    chunks = [Chunk.of_document(f"c{i}", "d", i, DOC, 6 * i, 6 * i + 5, 1) for i in range(3)]
    texts = ChunkTexts(chunks)
    assert len(texts) == 3 and texts[1] == "beta " and texts[-1] == chunks[2].text
    assert list(texts) == [c.text for c in chunks] and texts[:2] == ["alpha", "beta "]
