"""One action chunk's whole computation replayed as a single CUDA graph.

At batch 1 a diffusion executor's chunk is hundreds of small kernels (the encoder, then the denoiser once per DDIM
step): on a GPU the time goes to launching them, not to running them. ``torch.cuda.CUDAGraph`` records the launches
once and replays them as one (PyTorch's CUDA graphs, the "whole network capture" recipe of its documentation;
Diffusion Policy's real-time inference, Chi et al. 2023, is what it is for). The inputs live in static buffers that
every call copies into; the outputs are cloned out of static buffers.

What may be captured: device arithmetic only. No host copies (precompute the DDIM timesteps on the device:
:meth:`executor_vla.sampling.ChunkSampler.ddim_plan`), no ``.item()``, no data-dependent Python branches, and the
initial noise comes in as an input (drawn on the sampling generator's device, as the eager path draws it, so both
give the same chunk). ``benchmarks/executor_cuda.py`` measures eager against graph replay and checks that they agree.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from tandem.core.errors import ConfigError

ChunkFn = Callable[..., tuple[Tensor, ...]]


def _check_tensors(inputs: dict[str, Tensor]) -> None:
    bad = sorted(k for k, v in inputs.items() if not isinstance(v, Tensor))
    if bad:
        raise ConfigError(f"a CUDA graph takes torch tensors only; not tensors: {bad}")


def _signature(inputs: dict[str, Tensor]) -> tuple:
    return tuple(sorted((k, tuple(v.shape), v.dtype, str(v.device)) for k, v in inputs.items()))


class GraphedChunk:
    """``fn(**inputs) -> tuple of tensors`` captured once and replayed.

    Args:
        fn: the chunk's computation; keyword arguments only, tensors in and a tuple of tensors out, device
            arithmetic only (see the module docstring).
        example: one set of inputs, all on the same CUDA device; replays need the same keys, shapes and dtypes.
        warmup: eager calls on a side stream before the capture (cuDNN / cuBLAS pick their kernels there).

    Raises:
        ConfigError: an input that is not a tensor or not on a CUDA device, or no CUDA at all.
    """

    def __init__(self, fn: ChunkFn, example: dict[str, Tensor], warmup: int = 3):
        _check_tensors(example)
        off = sorted(k for k, v in example.items() if v.device.type != "cuda")
        if off or not torch.cuda.is_available():
            raise ConfigError(f"a CUDA graph needs every input on a CUDA device (not: {off or 'no CUDA here'})")
        self.signature = _signature(example)
        self._static_in = {k: v.detach().clone() for k, v in example.items()}
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.no_grad(), torch.cuda.stream(side):
            for _ in range(warmup):
                fn(**self._static_in)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(self.graph):
            self._static_out = tuple(fn(**self._static_in))

    def matches(self, inputs: dict[str, Tensor]) -> bool:
        """Whether ``inputs`` have the captured keys, shapes, dtypes and device."""
        return _signature(inputs) == self.signature

    def __call__(self, inputs: dict[str, Tensor]) -> tuple[Tensor, ...]:
        """Copy ``inputs`` into the static buffers, replay, and return copies of the outputs.

        Raises:
            ConfigError: inputs that differ from the captured ones in keys, shapes, dtypes or device (named).
        """
        _check_tensors(inputs)
        if not self.matches(inputs):
            raise ConfigError(f"inputs {_signature(inputs)} differ from the captured {self.signature}")
        for k, v in inputs.items():
            self._static_in[k].copy_(v)
        self.graph.replay()
        return tuple(o.clone() for o in self._static_out)


class GraphCache:
    """Graphs of one chunk function by input signature (batch size, text or none): captured on first use.

    Args:
        fn: see :class:`GraphedChunk`.
        weights: the parameters and buffers ``fn`` reads: a graph replays their memory as it was at capture, so
            when any of them is re-allocated (the model moved with ``.to()``) every graph is captured again.
        max_graphs: captures kept; more distinct signatures than this raise (each holds its own buffers).

    Raises:
        ConfigError: ``max_graphs`` < 1; as :class:`GraphedChunk`; or more than ``max_graphs`` signatures.
    """

    def __init__(self, fn: ChunkFn, weights: Callable[[], list[Tensor]] = list, max_graphs: int = 4):
        if max_graphs < 1:
            raise ConfigError(f"GraphCache: max_graphs must be >= 1, got {max_graphs}")
        self.fn, self.weights, self.max_graphs = fn, weights, max_graphs
        self._graphs: dict[tuple, GraphedChunk] = {}
        self._weights_at: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self._graphs)

    def __call__(self, inputs: dict[str, Tensor]) -> tuple[Tensor, ...]:
        """Replay the graph of ``inputs``' signature, capturing it first if there is none.

        Raises:
            ConfigError: see the class docstring.
        """
        at = tuple(w.data_ptr() for w in self.weights())
        if at != self._weights_at:
            self._graphs.clear()
            self._weights_at = at
        _check_tensors(inputs)
        key = _signature(inputs)
        graph = self._graphs.get(key)
        if graph is None:
            if len(self._graphs) >= self.max_graphs:
                raise ConfigError(f"more than {self.max_graphs} input signatures for one CUDA-graphed chunk")
            graph = self._graphs[key] = GraphedChunk(self.fn, inputs)
        return graph(inputs)
