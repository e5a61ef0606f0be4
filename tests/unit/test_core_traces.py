"""One trace resampling for training labels and inference: out-of-image points are clipped the same way in both."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from executor_vla.config import ExecutorConfig
from executor_vla.policy import DiffusionExecutor
from tandem.core import dataset_schema as schema
from tandem.core.errors import SubgoalSchemaError
from tandem.core.traces import resample_polyline, resample_trace
from tandem.core.types import KeypointTrace, Observation, Subgoal, TaskSpec
from tandem.runtime.labelling import OracleFrameLabeller
from tandem.runtime.rollout import StepRecord

torch.set_num_threads(1)
S = 32
# starts 5 px left of the image, ends 6 px below it; (x right, y down) in a (32, 32) image
OUTSIDE = KeypointTrace("agentview", np.array([[-5.0, 10.0], [20.0, 10.0], [20.0, 37.0]], np.float32), (S, S))


def test_out_of_image_points_are_clipped_to_the_image():
    pts, mask = resample_trace(OUTSIDE, 4, (S, S))
    assert pts[0].tolist() == [0.0, 10.0]  # x = -5 -> 0
    assert pts[-1].tolist() == [20.0, 31.0]  # y = 37 -> H - 1
    assert mask.tolist() == [1.0] * 4 and pts.dtype == np.float32
    assert pts.min() >= 0 and pts[:, 0].max() <= S - 1 and pts[:, 1].max() <= S - 1
    right, _ = resample_trace(KeypointTrace("agentview", np.array([[40.0, 3.0]], np.float32), (S, S)), 2)
    assert right.tolist() == [[31.0, 3.0], [31.0, 3.0]]  # x past the right border -> W - 1


def test_points_are_scaled_to_the_requested_image_before_clipping():
    tr = KeypointTrace("agentview", np.array([[-5.0, 0.0], [64.0, 64.0]], np.float32), (128, 128))
    pts, _ = resample_trace(tr, 2, (S, S))
    assert pts.tolist() == [[0.0, 0.0], [16.0, 16.0]]  # x = -5 -> -1.25 -> 0; 64 px of 128 -> 16 px of 32


def test_polyline_resampling_is_by_arc_length_and_rejects_bad_points():
    r = resample_polyline(np.array([[0, 0], [10, 0], [10, 10]]), 5)
    np.testing.assert_allclose(np.linalg.norm(np.diff(r, axis=0), axis=1), 5.0)
    np.testing.assert_allclose(r[[0, -1]], [[0, 0], [10, 10]])
    with pytest.raises(SubgoalSchemaError, match="finite"):
        resample_polyline(np.array([[0.0, np.nan]]), 3)
    with pytest.raises(SubgoalSchemaError, match="k >= 1"):
        resample_polyline(np.zeros((2, 2)), 0)


class _ListWriter:
    def __init__(self):
        self.frames = []

    def subgoal_task_index(self, text):
        return 0

    def add_frame(self, frame):
        self.frames.append(frame)


def _label(subgoal: Subgoal, image_size=(S, S)) -> np.ndarray:
    """The dataset's subgoal.trace label of a one-frame attempt at ``subgoal``."""
    task = TaskSpec(name="toy", instruction="pick a", objects=("a",), max_steps=5, skills={"pick": "grasped({0})"})
    writer = _ListWriter()
    lab = OracleFrameLabeller(writer, cameras=("agentview",), image_size=image_size, trace_len=8)
    img = np.zeros((*image_size, 3), np.uint8)
    ob = Observation(images={"agentview": img}, proprio=np.zeros(8), privileged={"predicates": {}})
    agent = SimpleNamespace(task=task, status=SimpleNamespace(attempts=1, verdicts=[]))
    lab(StepRecord(1, ob, np.zeros(7, np.float32), ob, {}, subgoal, agent))
    lab.finish_episode([])
    return writer.frames[0][schema.TRACE_KEY]


def test_training_label_and_inference_input_are_the_same_points():
    """x = -5 becomes 0 in the dataset label and in what the executor's network is given at run time."""
    sg = Subgoal("sg1", "pick", ("a",), "pick a", trace=OUTSIDE)
    label = _label(sg)
    torch.manual_seed(0)
    ex = DiffusionExecutor(ExecutorConfig(
        image_size=(S, S), cameras=("agentview",), vision_channels=(8, 8, 16), spatial_softmax_keypoints=8,
        down_dims=(16, 32), diffusion_step_embed_dim=16, cond_dim=16, text_encoder="hash", text_dim=32,
        use_goal_image=False, trace_mode="points", trace_len=8))
    seen = {}
    encode = ex.net.encode_subgoal

    def spy(batch):
        seen.update({k: v.clone() for k, v in batch.items()})
        return encode(batch)

    ex.net.encode_subgoal = spy
    ex.set_subgoal(sg)
    given = seen[schema.TRACE_KEY][0].numpy()
    np.testing.assert_array_equal(given, label)
    assert label[0, 0] == 0.0 and label[-1, 1] == S - 1
    np.testing.assert_array_equal(seen[schema.TRACE_MASK_KEY][0].numpy(), np.ones(8, np.float32))


def test_the_labeller_refuses_a_trace_made_for_another_image_size():
    tr = KeypointTrace("agentview", np.zeros((2, 2), np.float32), image_size=(4, 4))
    with pytest.raises(SubgoalSchemaError, match=r"\(4, 4\) image"):
        _label(Subgoal("sg1", "pick", ("a",), "pick a", trace=tr))
