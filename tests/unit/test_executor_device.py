"""``executor.device``: a name torch does not know is refused while the config is parsed, a device this machine
lacks when the executor is loaded; both name the key (it used to be a torch traceback after the env was built)."""

from __future__ import annotations

import pytest
import torch

from executor_vla.loading import check_device, load_executor
from tandem.core.errors import ConfigError
from tandem.runtime.config import StackConfig, load


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "CPU", ""])
def test_an_unknown_device_name_is_refused_while_parsing(device):
    with pytest.raises(ConfigError, match=r"executor.device must be cpu, cuda, cuda:N or mps"):
        load(StackConfig, {"executor": {"name": "diffusion", "device": device}})


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1", "mps"])
def test_device_names_torch_knows_are_accepted_while_parsing(device):
    assert load(StackConfig, {"executor": {"name": "diffusion", "device": device}}).executor.device == device


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_a_gpu_is_refused_before_loading():
    with pytest.raises(ConfigError, match="executor.device=cuda but torch sees no CUDA device"):
        check_device("cuda")
    with pytest.raises(ConfigError, match="no CUDA device"):
        load_executor("checkpoints/stack_three_diffusion", device="cuda:0")
    check_device("cpu")
