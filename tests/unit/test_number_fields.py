"""non_numbers: the one type check of numeric config fields, before any range comparison."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tandem.core.number_fields import non_numbers


@dataclass
class _Cfg:
    rate: float = 1.0
    steps: int = 3
    limit: float | None = None
    name: str = "x"


def test_names_each_field_that_is_not_a_number():
    assert non_numbers(_Cfg()) == []
    assert non_numbers(_Cfg(rate=2, limit=0.5)) == []  # an int is a number for a float field
    assert non_numbers(_Cfg(rate="abc", steps=True, limit="nan?")) == [
        ("rate", "must be a number, got 'abc'"), ("steps", "must be a number, got True"),
        ("limit", "must be a number or null, got 'nan?'")]
    assert non_numbers(_Cfg(rate=None)) == [("rate", "must be a number, got None")]  # None only where allowed
    with pytest.raises(TypeError, match="dataclass instance"):
        non_numbers(_Cfg)
