"""Trace rasterisation/resampling, augmentation, the U-Net and the text encoders."""

import numpy as np
import pytest
import torch

from executor_vla.conditioning import random_shift, rasterize_trace
from executor_vla.text_encoder import CachedTextEncoder, HashTextEncoder, load_text_encoder
from executor_vla.unet import ConditionalUnet1d
from tandem.core.traces import resample_polyline

# Tiny models on a shared 2-core CPU: one intra-op thread avoids OpenMP oversubscription stalls.
torch.set_num_threads(1)


def test_raster_draws_the_path_brighter_towards_its_end():
    pts = np.array([[10, 64], [110, 64]], np.float32)
    img = rasterize_trace(resample_polyline(pts, 16), np.ones(16), (128, 128))
    assert img.shape == (128, 128) and img.dtype == np.float32
    assert img[64, 12] > 0.2 and img[64, 108] > img[64, 12]  # on the line, rising to the end
    assert img[10, 64] == 0.0 and img[120, 64] == 0.0  # off the line
    # masked points are not drawn
    mask = np.ones(16)
    mask[8:] = 0
    half = rasterize_trace(resample_polyline(pts, 16), mask, (128, 128))
    assert half[64, 105] == 0.0 and half[64, 20] > 0


def test_resample_keeps_endpoints_and_even_spacing():
    pts = np.array([[0, 0], [10, 0], [10, 10]], np.float32)
    r = resample_polyline(pts, 5)
    np.testing.assert_allclose(r[0], [0, 0])
    np.testing.assert_allclose(r[-1], [10, 10])
    np.testing.assert_allclose(np.linalg.norm(np.diff(r, axis=0), axis=1), 5.0, atol=1e-5)
    assert resample_polyline(np.array([[3, 4]]), 4).shape == (4, 2)


def test_random_shift_translates_content():
    torch.manual_seed(0)
    x = torch.zeros(8, 1, 16, 16)
    x[:, :, 8, 8] = 1
    y = random_shift(x, 2)
    assert y.shape == x.shape
    assert torch.all(y.sum((1, 2, 3)) == 1)  # the dot moved (at most 2 px), never vanished
    pos = [tuple((yi[0] == 1).nonzero()[0].tolist()) for yi in y]
    assert all(abs(r - 8) <= 2 and abs(c - 8) <= 2 for r, c in pos) and len(set(pos)) > 1


def test_unet_shapes_and_conditioning_matters():
    torch.manual_seed(0)
    net = ConditionalUnet1d(7, 10, (16, 32, 64), step_embed_dim=16).eval()
    x = torch.randn(3, 16, 7)
    t = torch.tensor([1, 50, 99])
    c = torch.randn(3, 10)
    out = net(x, t, c)
    assert out.shape == (3, 16, 7)
    assert not torch.allclose(out, net(x, t, c + 1.0))


def test_cached_encoder_encodes_each_text_once():
    calls = []

    class Counting(HashTextEncoder):
        def encode(self, texts):
            calls.append(list(texts))
            return super().encode(texts)

    enc = CachedTextEncoder(Counting(32))
    a = enc.encode(["pick red", "place red", "pick red"])
    b = enc.encode(["pick red"])
    assert a.shape == (3, 32) and np.allclose(a[0], a[2]) and np.allclose(a[0], b[0])
    assert calls == [["pick red", "place red"]]
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0)


@pytest.mark.slow
def test_minilm_loads_offline_and_matches_sentence_transformers():
    enc = load_text_encoder("minilm", expected_dim=384)
    e = enc.encode(["stack the red cube on the green cube", "put the milk in bin 1"])
    assert e.shape == (2, 384) and np.allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    from sentence_transformers import SentenceTransformer

    from executor_vla.text_encoder import minilm_path

    ref = SentenceTransformer(str(minilm_path()), device="cpu").encode(
        ["stack the red cube on the green cube", "put the milk in bin 1"])
    np.testing.assert_allclose(e, ref, atol=1e-5)
