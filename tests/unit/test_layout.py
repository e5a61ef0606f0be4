"""The folder tree shows the layers: tandem/ holds only its four layer subpackages (import-linter checks the rest)."""

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAYERS = ("cli", "evaluation", "runtime", "core")


def test_tandem_holds_only_the_layer_subpackages():
    entries = sorted(p.name for p in (REPO / "tandem").iterdir() if p.name != "__pycache__")
    assert entries == sorted(["__init__.py", *LAYERS]), (
        "every module of tandem/ belongs to one layer subpackage (ARCHITECTURE.md); a module directly under "
        "tandem/ would escape the import-linter layers contract")


def test_the_layers_contract_names_every_layer_and_component():
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = [c for c in cfg["contracts"] if c["type"] == "layers"]
    assert len(layers) == 1
    assert layers[0]["layers"] == ["tandem.cli", "tandem.evaluation", "tandem.runtime",
                                   "sim | memory | planner_vlm | executor_vla | bridge", "tandem.core"]
    assert any(c["type"] == "acyclic_siblings" for c in cfg["contracts"])
