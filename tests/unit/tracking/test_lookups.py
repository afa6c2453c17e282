"""MLflow filter values are quoted or refused, never pasted in."""

import pytest

from rageval.errors import InputError
from rageval.tracking.lookups import quote


def test_plain_ids_are_quoted():
    assert quote("e57cf969e7a74040ae7cf0a1ffbebdbd") == "'e57cf969e7a74040ae7cf0a1ffbebdbd'"


@pytest.mark.parametrize("value", ["x' or '1'='1", 'a"b', "a\\b", "a`b", "a\nb", ""])
def test_values_that_could_change_the_filter_are_refused(value):
    with pytest.raises(InputError, match="not a valid MLflow id or digest"):
        quote(value)
