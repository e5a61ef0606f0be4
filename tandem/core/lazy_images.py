"""Camera images rendered when a component first reads them: the env renders only what the stack consumes.

Rendering dominates the simulator's step (agentview at 84 px: ~17 ms a frame with software EGL, against ~5–9 ms of
physics), yet most stacks read images only some steps: the track executor reads none, the learned planner and
verifier read agentview when they plan or judge (every 50–200 steps). :class:`LazyImages` is the
``Observation.images`` mapping of such an observation: its keys are the env's cameras (``"agentview" in images``
and ``len(images)`` render nothing), and reading a camera renders it once and keeps it.

A render is only right while the simulator still holds the observed state. The env passes ``is_current`` (e.g. "the
joint positions equal those at the observation"); reading an image that was never rendered after that turns false
raises :class:`~tandem.core.errors.StaleObservationError` instead of returning a picture of a later state. Images
read while current stay readable forever (an executor's observation history). Whoever keeps an observation to read
later calls :meth:`LazyImages.materialize` (or :func:`materialize_images`) while it is current.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

import numpy as np

from tandem.core.errors import StaleObservationError
from tandem.core.types import Observation, check_image


class LazyImages(Mapping[str, np.ndarray]):
    """``camera -> uint8 (H, W, 3)`` RGB (upright, origin top-left), rendered on first read.

    The same mapping holds an observation's depth images (``Observation.depth``: ``camera -> float32 (H, W)`` m)
    with ``check=check_depth``.

    Args:
        cameras: the camera names the env offers (the mapping's keys).
        render: ``camera -> uint8 (H, W, 3)`` of the simulator's current state.
        is_current: whether the simulator still holds the observed state.
        step: the observation's control step (for messages).
        check: ``(camera, array) -> None``, raising ``ValueError`` on a malformed render (default: RGB's
            :func:`~tandem.core.types.check_image`).

    Raises (on read):
        KeyError: a camera that is not one of ``cameras``. StaleObservationError: the image was never rendered and
        the simulator has moved on. ValueError: ``render`` returned something ``check`` refuses.
    """

    validates_on_read = True  # Observation.__post_init__ leaves the checks to the first read

    def __init__(self, cameras: Iterable[str], render: Callable[[str], np.ndarray], is_current: Callable[[], bool],
                 step: int = 0, check: Callable[[str, np.ndarray], None] = check_image):
        self._cameras = tuple(cameras)
        self._check = check
        self._render = render
        self._is_current = is_current
        self._cache: dict[str, np.ndarray] = {}
        self.step = int(step)

    def __getitem__(self, camera: str) -> np.ndarray:
        img = self._cache.get(camera)
        if img is not None:
            return img
        if camera not in self._cameras:
            raise KeyError(camera)
        if not self._is_current():
            raise StaleObservationError(
                f"the {camera!r} image of step {self.step} was never rendered, and the simulator has moved on; a "
                "component that keeps an observation to read later must have it rendered while it is current "
                "(tandem.core.lazy_images.materialize_images)")
        img = self._render(camera)
        self._check(camera, img)
        self._cache[camera] = img
        return img

    def __iter__(self) -> Iterator[str]:
        return iter(self._cameras)

    def __len__(self) -> int:
        return len(self._cameras)

    def __contains__(self, camera: object) -> bool:
        return camera in self._cameras

    @property
    def rendered(self) -> tuple[str, ...]:
        """The cameras rendered so far."""
        return tuple(c for c in self._cameras if c in self._cache)

    def materialize(self) -> LazyImages:
        """Render every camera not rendered yet (now, while current); returns self.

        Raises:
            StaleObservationError: the simulator has moved on and some camera was never rendered.
        """
        for camera in self._cameras:
            self[camera]
        return self

    def __repr__(self) -> str:
        return f"LazyImages(step={self.step}, cameras={list(self._cameras)}, rendered={list(self.rendered)})"


def materialize_images(observation: Observation | None) -> Observation | None:
    """Render the lazy images (and lazy depth images) of ``observation`` now (nothing to do for plain ``dict``
    images); returns it.

    Raises:
        StaleObservationError: it is too late (see :class:`LazyImages`).
    """
    if observation is not None:
        for mapping in (observation.images, observation.depth):
            if isinstance(mapping, LazyImages):
                mapping.materialize()
    return observation
