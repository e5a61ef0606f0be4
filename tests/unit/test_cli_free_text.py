"""An instruction on the command line is words, whatever punctuation it has: Hydra's list, sweep and quote syntax
does not apply to it (the README's `instruction="..., then ..."` runs as written)."""

from __future__ import annotations

import pytest

from tandem.cli.common import quote_free_text


@pytest.mark.parametrize("words", [
    "put the red cube on the blue cube, then the green one on the red one",
    "put the milk away; that's all", 'say "hi", [then] stop', "a\\b", "end\\", 'a \\"b', "",
])
def test_an_instruction_is_quoted_for_hydra_and_reads_back_as_written(words):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    arg = quote_free_text(f"instruction={words}")
    [override] = OverridesParser.create().parse_overrides([arg])
    assert override.value() == words


def test_other_arguments_and_quoted_values_are_left_alone():
    for arg in ("seed=3", "planner=learned", "instruction='already quoted'", 'instruction="x"', "--cfg"):
        assert quote_free_text(arg) == arg
