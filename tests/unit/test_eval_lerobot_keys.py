"""``tandem-eval`` given ``lerobot-eval``'s keys (issue 50, item 10): one line naming the key and tandem's name for it,
exit status 2, nothing run or written (docs/lerobot_conventions.md holds the whole mapping)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_cli_bad_config_input import refused

from tandem.cli.eval import LEROBOT_EVAL_KEYS, lerobot_key_error

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("args", "line"), [
    (["--env.type=libero", "--env.task=libero_10"], "env.task is lerobot-eval's key; in tandem-eval: suite=libero_10"),
    (["env.task=libero_10"], "env.task is lerobot-eval's key; in tandem-eval: suite=libero_10"),
    (["suite=smoke", "--policy.path=outputs/train/x"], "policy.path is lerobot-eval's key; in tandem-eval: "
                                                        "'run_variants=[lerobot]' variants.lerobot.executor.checkpoint="),
    (["eval.n_episodes=10"], "eval.n_episodes is lerobot-eval's key; in tandem-eval: suite.seeds"),
    (["env.type=libero"], "env.type is lerobot-eval's key; in tandem-eval: drop it"),
])
def test_lerobot_eval_keys_are_refused_with_tandems_name(args, line, tmp_path, monkeypatch, capsys):
    assert line in refused("eval", args, tmp_path, monkeypatch, capsys)


def test_tandem_keys_pass_and_the_mapping_names_real_keys():
    assert lerobot_key_error(["suite=libero_10", "env.render=true", "out_dir=x", "workers=2"]) is None
    from tandem.evaluation.config import EvalConfig, SuiteConfig
    from tandem.runtime.config import EnvConfig

    eval_keys = {f"{section}.{name}" for section, schema in (("suite", SuiteConfig), ("env", EnvConfig))
                 for name in schema.__dataclass_fields__} | set(EvalConfig.__dataclass_fields__)
    named = {k for hint in LEROBOT_EVAL_KEYS.values()
             for k in re.findall(r"\b(?:suite\.[a-z_]+|env\.[a-z_]+|out_dir|workers)\b", hint)}
    assert named and named <= eval_keys, named - eval_keys
    assert (REPO / "configs" / "suite" / "libero_10.yaml").exists()
