"""``dataset.synthetic`` of the three training CLIs takes dotted command-line keys (it used to be a null structured
node, into which OmegaConf cannot merge keys: ``dataset.synthetic.episodes=4`` failed with a traceback)."""

from __future__ import annotations

import json

import pytest
from hydra import compose, initialize_config_dir

from tandem.cli import train, train_state, train_trace
from tandem.cli.common import CONFIG_DIR, load_config, synthetic_dataset, synthetic_on
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
def test_by_default_there_is_no_synthetic_dataset_and_a_root_is_needed(name, tmp_path):
    with pytest.raises(ConfigError, match="dataset.root is not set"):
        _load(name, [])
    cfg = _load(name, [f"dataset.root={tmp_path}"])
    assert not synthetic_on(cfg.dataset.synthetic) and cfg.dataset.root == str(tmp_path)


@pytest.mark.parametrize("name", sorted(CLIS))
def test_a_root_and_a_synthetic_dataset_together_are_refused(name, tmp_path):
    with pytest.raises(ConfigError, match="synthetic.*episodes=0 turns"):
        _load(name, [f"dataset.root={tmp_path}", "dataset.synthetic.episodes=2"])


def test_tandem_train_refuses_a_missing_root_and_a_bad_mixed_precision(tmp_path):
    cfg = _load("tandem_train", [f"dataset.root={tmp_path / 'nowhere'}"])
    with pytest.raises(ConfigError, match="dataset.root=.* is not a directory"):
        train._dataset_root(cfg, tmp_path)
    with pytest.raises(ConfigError, match="mixed_precision must be no, fp16 or bf16"):
        _load("tandem_train", [f"dataset.root={tmp_path}", "train.mixed_precision=bogus"])


def test_the_state_sections_name_the_bad_field():
    with pytest.raises(ConfigError, match=r"dataset.synthetic.image_size must be \[H, W\]"):
        _load("train_state", ["dataset.synthetic.episodes=2", "dataset.synthetic.image_size=[0,0]"])
    with pytest.raises(ConfigError, match="dataset.synthetic.frames must be >= 2"):
        _load("train_trace", ["dataset.synthetic.episodes=2", "dataset.synthetic.frames=1"])


def test_a_synthetic_dataset_is_reused_only_when_it_is_the_one_asked_for(tmp_path):
    made = []

    def make():
        made.append(1)
        (tmp_path / "syn" / "meta").mkdir(parents=True)
        (tmp_path / "syn" / "meta" / "info.json").write_text(json.dumps(
            {"total_episodes": 2, "features": {"observation.images.agentview": {"dtype": "image", "shape": [32, 32, 3]},
                                               "observation.state": {"dtype": "float32", "shape": [8]}}}))

    assert synthetic_dataset(tmp_path / "syn", 2, [32, 32], make) == str(tmp_path / "syn") and made == [1]
    assert synthetic_dataset(tmp_path / "syn", 2, (32, 32), make) == str(tmp_path / "syn") and made == [1]
    with pytest.raises(ConfigError, match="already holds a synthetic dataset of 2 episodes at \\[\\[32, 32\\]\\] px"):
        synthetic_dataset(tmp_path / "syn", 6, [32, 32], make)
    with pytest.raises(ConfigError, match="not the 2 at \\[84, 84\\]"):
        synthetic_dataset(tmp_path / "syn", 2, [84, 84], make)


@pytest.mark.parametrize("name", sorted(CLIS))
def test_negative_synthetic_episodes_are_refused(name):
    with pytest.raises(ConfigError, match=r"synthetic.episodes must be >= 0"):
        _load(name, ["dataset.synthetic.episodes=-1"])
