"""benchmarks/trace_vs_oracle.py says where each learned trace came from: the expert's geometry over the read, the
trace network (also after the geometry was skipped), or the oracle handed over."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SPEC = importlib.util.spec_from_file_location(
    "trace_vs_oracle", Path(__file__).resolve().parents[2] / "benchmarks" / "trace_vs_oracle.py")
tvo = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(tvo)


def test_the_latest_event_for_the_subgoal_names_the_source():
    events = [{"kind": "geometric_pick", "subgoal": "pick up the milk"},
              {"kind": "geometric_pick_skipped", "subgoal": "pick up the can", "reason": "lying"},
              {"kind": "geometric_pick", "subgoal": "pick up the can"},
              {"kind": "geometric_pick_skipped", "subgoal": "pick up the milk", "reason": "lying"}]
    assert tvo.trace_source(events, "pick up the can", False) == "geometry"
    assert tvo.trace_source(events, "pick up the milk", False) == "network"  # the latest plan skipped it
    assert tvo.trace_source(events, "put the milk into its bin", False) == "network"  # no geometry for places
    assert tvo.trace_source(events, "pick up the can", True) == "oracle"
