"""The registry of pick-geometry kinds (sim.tasks.registry.read_pick_geometry, tandem.core.pick_geometry): a record is
read by the kind it names, an unknown kind is refused naming it and the known ones, records made before kinds were
named (the shipped trace checkpoints) still read as their kind, and the learned planner reads its checkpoint's record
only with the reader the runtime hands it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from planner_vlm.learned.geometry import LearnedGeometry
from sim.tasks.registry import _PICK_GEOMETRY_KINDS, make_task, pick_geometry_kinds, read_pick_geometry
from tandem.core.errors import ConfigError, UnknownNameError

ROOT = Path(__file__).resolve().parents[2]
NUTS = {"base_pos": [-0.56, 0.0, 0.912],
        "nuts": {"red": {"grasp_offset_m": 0.06, "square_to_peg": True, "peg_pos": [0.23, 0.1, 0.85]}}}
BINS = {"base_pos": [-0.5, -0.1, 0.912], "floor_z": 0.81,
        "source_bin": {"inner_lo": [-0.3, -0.4], "inner_hi": [0.3, 0.4], "rim_z": 0.9},
        "objects": {"red": {"grasp_dz": 0.0, "yaw_sym": math.pi, "yaw_offset": 0.0, "narrow_side": False,
                            "extents": [[-0.05, -0.015, -0.02], [0.05, 0.015, 0.02]], "place_xy": [0.0, 0.4]}}}


def test_a_record_is_read_by_the_kind_it_names_and_round_trips():
    for kind, record in (("nut_pegs", NUTS), ("bin_objects", BINS)):
        geometry = read_pick_geometry({"kind": kind, **record})
        assert geometry.kind == kind and geometry.object_names() == ("red",)
        assert geometry.to_dict() == {"kind": kind, **record}
        assert read_pick_geometry(geometry.to_dict()).to_dict() == geometry.to_dict()


def test_an_unknown_kind_is_refused_in_one_line_naming_it_and_the_known_ones():
    with pytest.raises(UnknownNameError) as err:
        read_pick_geometry({"kind": "libero_handles", **NUTS})
    message = str(err.value)
    assert "\n" not in message and "'libero_handles'" in message
    assert "known pick_geometry kinds: bin_objects, nut_pegs" in message
    assert isinstance(err.value, ConfigError)
    with pytest.raises(ConfigError, match="kind must be a string"):
        read_pick_geometry({"kind": 3, **NUTS})
    with pytest.raises(ConfigError, match="must be a mapping naming its kind"):
        read_pick_geometry(["nut_pegs"])


def test_a_record_without_a_kind_is_read_by_the_old_rule():
    assert read_pick_geometry(NUTS).kind == "nut_pegs"
    assert read_pick_geometry(BINS).kind == "bin_objects"
    assert read_pick_geometry(NUTS).to_dict() == {"kind": "nut_pegs", **NUTS}
    with pytest.raises(ConfigError, match="both nuts .* and objects"):
        read_pick_geometry({**BINS, "nuts": NUTS["nuts"]})
    with pytest.raises(ConfigError, match=r"must name its kind \(known kinds: bin_objects, nut_pegs\)"):
        read_pick_geometry({"base_pos": [0, 0, 0]})


def test_a_kind_refuses_another_kinds_record_and_its_own_malformed_fields():
    with pytest.raises(ConfigError, match="of kind 'bin_objects' is not a nut_pegs geometry"):
        read_pick_geometry({**NUTS, "kind": "nut_pegs"}).from_dict({**NUTS, "kind": "bin_objects"})
    with pytest.raises(ConfigError, match="nuts must be a non-empty mapping"):
        read_pick_geometry({"kind": "nut_pegs", "base_pos": [0, 0, 0], "nuts": {}})
    with pytest.raises(ConfigError, match="floor_z"):
        read_pick_geometry({"kind": "bin_objects", **{k: v for k, v in BINS.items() if k != "floor_z"}})


def test_every_registered_kind_is_its_classes_kind():
    assert pick_geometry_kinds() == sorted(_PICK_GEOMETRY_KINDS)
    for kind, record in (("nut_pegs", NUTS), ("bin_objects", BINS)):
        assert type(read_pick_geometry(record)).kind == kind


@pytest.mark.parametrize("task, kind", [("nut_assembly", "nut_pegs"), ("pick_place_bins", "bin_objects")])
def test_the_shipped_checkpoints_records_without_a_kind_read_as_the_tasks_geometry_today(task, kind):
    record = json.loads((ROOT / "checkpoints" / "trace" / task / "config.json").read_text())["model"]["pick_geometry"]
    assert "kind" not in record  # recorded before kinds were named: the old rule reads it
    now = make_task(task).pick_geometry()
    assert now["kind"] == kind
    assert read_pick_geometry(record).to_dict() == read_pick_geometry(now).to_dict() == now


class _Trace:
    def __init__(self, pick_geometry):
        self.cfg = type("Cfg", (), {"objects": ("red",), "pick_geometry": pick_geometry})()


def test_the_learned_geometry_reads_its_checkpoints_record_only_with_a_given_reader():
    geometry = LearnedGeometry(None, _Trace(NUTS), pick_geometry_reader=read_pick_geometry)
    assert geometry.pick_geometry is not None and geometry.pick_geometry.kind == "nut_pegs"
    with pytest.raises(ConfigError, match="no pick_geometry_reader"):
        LearnedGeometry(None, _Trace(NUTS))
    assert LearnedGeometry(None, _Trace(NUTS), geometric_picks=False).pick_geometry is None
    assert LearnedGeometry(None, _Trace({})).pick_geometry is None
    with pytest.raises(UnknownNameError, match="'libero_handles'"):
        LearnedGeometry(None, _Trace({"kind": "libero_handles"}), pick_geometry_reader=read_pick_geometry)
    with pytest.raises(ConfigError, match=r"names \['blue'\], not among its objects"):
        LearnedGeometry(None, _Trace({**NUTS, "nuts": {"blue": NUTS["nuts"]["red"]}}),
                        pick_geometry_reader=read_pick_geometry)
