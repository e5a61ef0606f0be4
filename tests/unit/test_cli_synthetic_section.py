"""``dataset.synthetic`` of the three training CLIs takes dotted command-line keys (it used to be a null structured
node, into which OmegaConf cannot merge keys: ``dataset.synthetic.episodes=4`` failed with a traceback)."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir

from tandem.cli import train, train_state, train_trace
from tandem.cli.common import CONFIG_DIR, load_config, synthetic_on
from tandem.core.errors import ConfigError

CLIS = {  # config name -> (registration, schema loader)
    "tandem_train": (train._register_primary_config, train.load_train_config),
    "train_state": (train_state._register, lambda c: load_config(train_state.TrainStateRunConfig, c)),
    "train_trace": (train_trace._register, lambda c: load_config(train_trace.TrainTraceRunConfig, c)),
}


def _load(name: str, overrides: list[str]):
    register, load = CLIS[name]
    register()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return load(compose(config_name=name, overrides=overrides))


@pytest.mark.parametrize("name", sorted(CLIS))
@pytest.mark.parametrize("overrides", [["dataset.synthetic.episodes=3"], ["dataset.synthetic={episodes:3}"]])
def test_a_synthetic_dataset_is_asked_for_with_dotted_or_dict_overrides(name, overrides):
    cfg = _load(name, overrides)
    assert synthetic_on(cfg.dataset.synthetic) and cfg.dataset.synthetic.episodes == 3


@pytest.mark.parametrize("name", sorted(CLIS))
def test_by_default_there_is_no_synthetic_dataset_and_a_root_is_needed(name):
    with pytest.raises(ConfigError, match="dataset.root is not set"):
        _load(name, [])
    cfg = _load(name, ["dataset.root=/some/dataset"])
    assert not synthetic_on(cfg.dataset.synthetic) and cfg.dataset.root == "/some/dataset"


@pytest.mark.parametrize("name", sorted(CLIS))
def test_a_root_and_a_synthetic_dataset_together_are_refused(name):
    with pytest.raises(ConfigError, match="synthetic"):
        _load(name, ["dataset.root=/some/dataset", "dataset.synthetic.episodes=2"])


@pytest.mark.parametrize("name", sorted(CLIS))
def test_negative_synthetic_episodes_are_refused(name):
    with pytest.raises(ConfigError, match=r"synthetic.episodes must be >= 0"):
        _load(name, ["dataset.synthetic.episodes=-1"])
