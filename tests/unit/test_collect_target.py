"""``tandem-collect episodes=N`` is a target total: a total below what the dataset holds is refused, not a no-op."""

from __future__ import annotations

import pytest

from tandem.cli.collect import check_target
from tandem.core.errors import ConfigError


def test_a_target_below_the_episodes_already_in_is_refused_with_the_total_that_adds():
    # `episodes=+1` reaches the collector as 1 (Hydra); on a dataset of 4 it used to save nothing and exit 0
    with pytest.raises(ConfigError, match=r"episodes=1 is below the 4 episodes already in d.*episodes=5 adds one"):
        check_target(1, 4, "d")
    check_target(4, 4, "d")  # a finished collection run again: nothing to do, not an error
    check_target(6, 4, "d")
    check_target(3, 0, "d")
