"""The oracle-sim VLM: an OpenAI-compatible HTTP server that answers tandem's real VLM client with the ORACLE's plan,
points and verdicts, degraded by seeded knobs. SIM-ONLY and PRIVILEGED: it answers from the simulator's truth.

What it is for: measuring how good a VLM must be for the VLM-driven stack (``planner=vlm``, hybrid or pointing) to
work, without VLM weights. Its replies go through the same client (:mod:`planner_vlm.clients.openai_client`), parser
(:mod:`planner_vlm.plan_parser`) and schema enforcement as a real server's; only the model is simulated.

The truth channel (the privileged rule). A VLM request carries only what the VLM sees (images, the prompt's text and
memory view); it cannot carry the truth, and the VLM planner and verifier never read ``Observation.privileged`` or
``TaskSpec.goals``. The truth reaches the server on a side channel instead, as the bridge's oracle channel does: the
runtime's :class:`OracleTruthPublisher` (an oracle helper the agent holds, configured with the stack's
``oracle_truth_url``; recorded in ``oracle_components`` and so in every summary's ``"privileged": true``) POSTs
``/oracle/truth`` before every control step:

    {"episode": str, "step": int, "task": str, "instruction": str, "goals": [judge's goal predicates],
     "privileged": Observation.privileged (object poses, predicates), "calibration": {camera: calibration JSON}}

One server serves one stack at a time: truth from an episode older than the current one (a second stack posting to
the same server) is refused with HTTP 409, which fails that stack's episode with the reason. Without truth the server
answers HTTP 409 (``no simulator truth``), which the client records as a failed exchange.
It also refuses (HTTP 400) a request whose ``model`` does not name ``oracle-sim-vlm``, so every exchange record,
episode log and result row made through it carries that name (``vlm_exchange.meta.model``).

Endpoints: ``POST /v1/chat/completions`` (OpenAI chat completions, non-streaming; ``response_format`` json_schema
accepted), ``GET /v1/models``, ``POST /oracle/truth``, ``GET /oracle/stats`` (counts of every knob applied).

Answers:

* a plan request (``response_format`` schema name ``tandem_plan``, or a prompt with ``OUTPUT: ... "remaining"``): the
  oracle planner's done/remaining split (:class:`planner_vlm.oracle_planner.OraclePlanner` over the truth's
  predicates and the prompt's memory view), and as ``next_trace`` the *points* of ``remaining[0]``
  (:func:`subgoal_points`): for a skill on object ``x`` [top centre of x, a point on x's top face toward the middle
  of its local +x side], then for a place target ``y`` [top centre of y, a point on y's top face likewise]; in the
  ``agentview`` image, in the frame :attr:`SimVLMKnobs.point_frame`;
* a verdict request (schema ``tandem_verdict`` or a prompt with ``SKILL: ... (achieved when P holds)``): ``P`` as the
  truth's predicates say, confidence 1.

Knobs (:class:`SimVLMKnobs`), each drawn from a generator seeded by ``(seed, episode, truth step, request text)``, so
a request gets the same answer every time it is sent (deterministic per request) while different requests draw
independently:

* ``point_sigma_px``: Gaussian noise (px, per coordinate) on every point;
* ``wrong_object_rate``: ``remaining[0]``'s first argument replaced by another object of the task (the points then
  show that object: a VLM pointing at what it named);
* ``wrong_order_rate``: the first two pick-and-place chunks of ``remaining`` swapped (two subgoals where there are
  no chunks);
* ``malformed_rate``: the reply text broken (cut mid-JSON, wrapped in prose, an extra key, or an unknown skill: each
  one the parser rejects);
* ``refusal_rate``: a refusal ("I can't help with that") instead of JSON;
* ``latency_s``: seconds before every answer;
* ``verdict_flip_rate``: the verdict's ``success`` flipped (the reason says so).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import asdict, dataclass, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import numpy as np

from tandem.core.errors import ConfigError
from tandem.core.types import Observation, TaskSpec, to_jsonable

#: Every model name the server answers contains this; results made through it say so.
MODEL_NAME = "oracle-sim-vlm"
#: The camera the points are given in.
POINT_CAMERA = "agentview"
#: Where a point toward an object's side is put, as a fraction of the way from its top centre to the side's middle
#: (inside the top face, so that its depth is the top face's).
AXIS_FRACTION = 0.6
#: The verifier prompt's skill line (planner_vlm/prompts/verify_v1.md).
SKILL_LINE = re.compile(r"SKILL: (\S+) \(achieved when (\S+) holds\)")
REFUSAL_TEXT = "I'm sorry, but I can't help with that request."
MALFORMED_KINDS = ("truncated", "prose", "extra_key", "unknown_skill")


@dataclass(frozen=True)
class SimVLMKnobs:
    """The degradation knobs of the oracle-sim VLM (see the module docstring); all off by default.

    Attributes:
        point_sigma_px: std of the Gaussian noise on each point coordinate, px of the native camera image (>= 0).
        wrong_object_rate, wrong_order_rate, malformed_rate, refusal_rate, verdict_flip_rate: probabilities in [0, 1]
            per request.
        latency_s: seconds slept before each answer (>= 0).
        seed: the knobs' seed (>= 0).
        point_frame: the frame points are written in: ``unit`` (0-1; what the client declares for a model named
            ``oracle-sim-vlm``, ``planner.point_frame=auto``), ``pixels`` or ``grid1000``.
        top_offset_m: the height (m) of an object's top face above its origin (the truth's pose), where the points
            go: 0.022, stack_three's cube half size.
    """

    point_sigma_px: float = 0.0
    wrong_object_rate: float = 0.0
    wrong_order_rate: float = 0.0
    malformed_rate: float = 0.0
    refusal_rate: float = 0.0
    latency_s: float = 0.0
    verdict_flip_rate: float = 0.0
    seed: int = 0
    point_frame: str = "unit"
    top_offset_m: float = 0.022

    RATES: ClassVar[tuple[str, ...]] = ("wrong_object_rate", "wrong_order_rate", "malformed_rate", "refusal_rate",
                                        "verdict_flip_rate")

    def __post_init__(self) -> None:
        for k in self.RATES:
            v = getattr(self, k)
            if not (isinstance(v, int | float) and 0.0 <= float(v) <= 1.0):
                raise ConfigError(f"{k} must be a probability in [0, 1], got {v!r}")
        for k in ("point_sigma_px", "latency_s", "top_offset_m"):
            v = getattr(self, k)
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
                raise ConfigError(f"{k} must be a finite number >= 0, got {v!r}")
        if not (isinstance(self.seed, int) and self.seed >= 0):
            raise ConfigError(f"seed must be an integer >= 0, got {self.seed!r}")
        if self.point_frame not in ("unit", "pixels", "grid1000"):
            raise ConfigError(f"point_frame must be unit, pixels or grid1000, got {self.point_frame!r}")

    @classmethod
    def from_pairs(cls, pairs: dict[str, str]) -> SimVLMKnobs:
        """Knobs from ``key=value`` strings (the CLI's).

        Raises:
            ConfigError: an unknown key or a bad value, naming the key.
        """
        types = {f.name: f.type for f in fields(cls)}
        out: dict[str, Any] = {}
        for k, v in pairs.items():
            if k not in types:
                raise ConfigError(f"{k}: unknown knob; known: {sorted(types)}")
            try:
                out[k] = v if k == "point_frame" else (int(v) if k == "seed" else float(v))
            except ValueError as e:
                raise ConfigError(f"{k} must be a number, got {v!r}") from e
        return cls(**out)

    def label(self) -> str:
        """The knobs as a short string for the model name, e.g. ``sigma0-obj0-order0-mal0-ref0-lat0-flip0-seed0``."""
        def f(x: float) -> str:
            return f"{x:g}"
        return (f"sigma{f(self.point_sigma_px)}-obj{f(self.wrong_object_rate)}-order{f(self.wrong_order_rate)}-"
                f"mal{f(self.malformed_rate)}-ref{f(self.refusal_rate)}-lat{f(self.latency_s)}-"
                f"flip{f(self.verdict_flip_rate)}-seed{self.seed}")


class _PromptMemory:
    """The memory the oracle planner reads, from the prompt's memory view (``attempts`` by signature)."""

    def __init__(self, view: dict[str, Any]):
        self._view = view

    def view(self) -> dict[str, Any]:
        return self._view

    def attempts(self, subgoal: Any) -> int:
        return int((self._view.get("attempts") or {}).get(subgoal.signature, 0))


class TruthConflict(ConfigError):
    """Two stacks post truth to one server (HTTP 409 to the poster)."""


def request_text(body: dict[str, Any]) -> str:
    """Every text part of the request's messages, joined (images left out)."""
    out = []
    for m in body.get("messages") or []:
        c = m.get("content") if isinstance(m, dict) else None
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out += [p.get("text", "") for p in c if isinstance(p, dict) and p.get("type") == "text"]
    return "\n".join(out)


def _last_user_text(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        return ""
    return request_text({"messages": [users[0]]})


class OracleSimVLM:
    """The answering logic, without HTTP (the server calls :meth:`chat`; tests may call it directly).

    Args:
        knobs: the degradation knobs.
        sleep: the sleep function (tests replace it).
    """

    is_oracle: ClassVar[bool] = True

    def __init__(self, knobs: SimVLMKnobs | None = None, sleep: Any = time.sleep):
        self.knobs = knobs or SimVLMKnobs()
        self._sleep = sleep
        self._lock = threading.Lock()
        self.truth: dict[str, Any] | None = None
        self._episode: str | None = None
        self._task: TaskSpec | None = None
        self._planner: Any = None
        self._past_episodes: set[str] = set()
        self.stats: dict[str, int] = {k: 0 for k in ("plan_requests", "verdict_requests", "other_requests",
                                                     "wrong_object", "wrong_order", "malformed", "refusal",
                                                     "verdict_flip", "points_noised", "no_truth")}
        # the truth's first post builds the task and the oracle planner: import them now, not while a stack waits
        import planner_vlm.oracle_planner  # noqa: F401
        from sim.tasks.registry import make_task

        for name in ("stack_three", "pick_place_bins", "nut_assembly"):
            make_task(name)

    # ------------------------------------------------------------------ truth
    def post_truth(self, payload: dict[str, Any]) -> None:
        """Take the simulator's truth of the current step (the module docstring's payload).

        Raises:
            ConfigError: a payload without ``episode``, ``task``, ``goals``, ``privileged.predicates``, or an unknown
                task. TruthConflict: the truth of an episode older than the current one (two stacks post here).
        """
        for k in ("episode", "task", "goals", "privileged"):
            if k not in payload:
                raise ConfigError(f"truth payload lacks {k!r}")
        if not isinstance(payload["privileged"], dict) or not isinstance(payload["privileged"].get("predicates"),
                                                                           dict):
            raise ConfigError("truth payload's privileged has no 'predicates' mapping")
        with self._lock:
            if payload["episode"] in self._past_episodes:
                raise TruthConflict(f"truth of episode {payload['episode']} after a later episode's: another stack "
                                    "is posting truth to this server (one oracle-sim VLM serves one stack at a time)")
            if payload["episode"] != self._episode:
                if self._episode is not None:
                    self._past_episodes.add(self._episode)
                from planner_vlm.oracle_planner import OraclePlanner
                from sim.tasks.registry import make_task

                task = make_task(str(payload["task"])).parts.scene.spec_for_goals(tuple(payload["goals"]),
                                                                       str(payload.get("instruction", "")))
                planner = OraclePlanner()
                planner.reset(task)
                self._episode, self._task, self._planner = payload["episode"], task, planner
            self.truth = payload

    # ------------------------------------------------------------------ chat
    def chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """``(HTTP status, JSON body)`` of a chat-completions request."""
        model = str(body.get("model") or "")
        if MODEL_NAME not in model:
            return 400, {"error": {"message": f"model must name {MODEL_NAME!r} (this server is the privileged "
                                              f"oracle-sim VLM), got {model!r}", "type": "invalid_request_error"}}
        if self.knobs.latency_s > 0:
            self._sleep(self.knobs.latency_s)
        fmt = body.get("response_format") or {}
        schema_name = ((fmt.get("json_schema") or {}).get("name") if isinstance(fmt, dict) else None) or ""
        text = request_text(body)
        with self._lock:
            truth, task, planner = self.truth, self._task, self._planner
            if truth is None or task is None:
                self.stats["no_truth"] += 1
                return 409, {"error": {"message": "no simulator truth: the oracle-sim VLM answers only a stack run "
                                                  "with oracle_truth_url=<this server> (it posts the truth each step)",
                                       "type": "no_truth"}}
            rng = self._rng(truth, text)
            if schema_name == "tandem_verdict" or SKILL_LINE.search(text):
                self.stats["verdict_requests"] += 1
                content = self._verdict(text, truth, rng)
            elif schema_name == "tandem_plan" or '"remaining"' in text:
                self.stats["plan_requests"] += 1
                content = self._plan(_last_user_text(body), truth, task, planner, rng)
            else:
                self.stats["other_requests"] += 1
                content = json.dumps({"error": "the oracle-sim VLM answers tandem's plan and verdict prompts only"})
        reply = {"id": f"oracle-sim-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
                 "created": int(time.time()), "model": f"{MODEL_NAME}/{self.knobs.label()}",
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": content}}],
                 "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}
        return 200, reply

    def _rng(self, truth: dict[str, Any], text: str) -> np.random.Generator:
        """The request's generator: seeded by the knobs' seed, the episode, the truth's step and the request text."""
        key = f"{truth.get('episode')}|{truth.get('step')}|{text}".encode()
        digest = int.from_bytes(hashlib.sha256(key).digest()[:8], "little")
        return np.random.default_rng([self.knobs.seed, digest])

    def _broken(self, text: str, rng: np.random.Generator, draws: np.ndarray) -> str | None:
        """A refusal or a malformed reply where the draws say so (refusal first), else None."""
        k = self.knobs
        if draws[0] < k.refusal_rate:
            self.stats["refusal"] += 1
            return REFUSAL_TEXT
        if draws[1] < k.malformed_rate:
            self.stats["malformed"] += 1
            kind = MALFORMED_KINDS[int(rng.integers(len(MALFORMED_KINDS)))]
            if kind == "truncated":
                return text[: max(1, len(text) // 2)]
            if kind == "prose":
                return f"Sure! Here is the answer:\n{text}\nLet me know if you need anything else."
            obj = json.loads(text)
            if kind == "extra_key":
                obj["confidence_note"] = "made up"
            elif "remaining" in obj and obj["remaining"]:
                obj["remaining"][0]["skill"] = "teleport"
            else:
                obj["extra"] = True
            return json.dumps(obj)
        return None

    # ------------------------------------------------------------------ verdicts
    def _verdict(self, text: str, truth: dict[str, Any], rng: np.random.Generator) -> str:
        draws = rng.random(3)
        m = SKILL_LINE.search(text)
        preds = truth["privileged"]["predicates"]
        if m is None or m.group(2) not in preds:
            pred = m.group(2) if m else "?"
            verdict = {"success": False, "confidence": 0.5, "reason": f"cannot judge {pred}"}
        else:
            ok = bool(preds[m.group(2)])
            reason = f"{m.group(2)} {'holds' if ok else 'does not hold'}"
            if draws[2] < self.knobs.verdict_flip_rate:
                self.stats["verdict_flip"] += 1
                ok, reason = not ok, reason + " (flipped by the oracle-sim VLM's verdict_flip_rate)"
            verdict = {"success": ok, "confidence": 1.0, "reason": reason}
        text_out = json.dumps(verdict)
        broken = self._broken(text_out, rng, draws)
        return broken if broken is not None else text_out

    # ------------------------------------------------------------------ plans
    def _plan(self, prompt: str, truth: dict[str, Any], task: TaskSpec, planner: Any,
              rng: np.random.Generator) -> str:
        draws = rng.random(4)
        from planner_vlm.prompting import memory_in_prompt

        view = memory_in_prompt(prompt).to_dict()
        plan = planner.plan_from_predicates(truth["privileged"]["predicates"], _PromptMemory(view))
        done, remaining = ([as_vlm_subgoal(task, s.skill, s.args) for s in part] for part in (plan.done,
                                                                                               plan.remaining))
        notes = []
        if draws[2] < self.knobs.wrong_order_rate and len(remaining) >= 2:
            remaining = swapped_order(remaining)
            self.stats["wrong_order"] += 1
            notes.append("order swapped")
        if draws[3] < self.knobs.wrong_object_rate and remaining and remaining[0]["args"]:
            sg = remaining[0]
            others = [o for o in task.objects if o not in sg["args"]]
            if others:
                sg["args"] = [others[int(rng.integers(len(others)))], *sg["args"][1:]]
                sg["text"] = task.subgoal_text(sg["skill"], sg["args"])
                self.stats["wrong_object"] += 1
                notes.append("object replaced")
        next_trace = None
        if remaining:
            pts = self.points(remaining[0]["skill"], remaining[0]["args"], truth, rng)
            if pts is not None:
                next_trace = {"camera": POINT_CAMERA, "points": pts}
        reply = {"rationale": "oracle-sim VLM: the oracle's plan" + (f" ({', '.join(notes)})" if notes else ""),
                 "done": done, "remaining": remaining, "next_trace": next_trace}
        text = json.dumps(reply)
        broken = self._broken(text, rng, draws)
        return broken if broken is not None else text

    def points(self, skill: str, args: list[str], truth: dict[str, Any],
               rng: np.random.Generator) -> list[list[float]] | None:
        """The points of a subgoal (:func:`subgoal_points`) in :attr:`SimVLMKnobs.point_frame`, noised; None without
        the point camera's calibration or where an argument has no pose."""
        cal = (truth.get("calibration") or {}).get(POINT_CAMERA)
        if cal is None:
            return None
        px = subgoal_points(args, truth["privileged"].get("objects") or {}, cal, self.knobs.top_offset_m)
        if px is None:
            return None
        if self.knobs.point_sigma_px > 0:
            px = px + rng.normal(0.0, self.knobs.point_sigma_px, px.shape)
            self.stats["points_noised"] += 1
        h, w = (int(v) for v in cal["image_size"])
        px = np.clip(px, [0.0, 0.0], [w - 1.0, h - 1.0])
        if self.knobs.point_frame == "unit":
            px = px / np.array([w, h])
        elif self.knobs.point_frame == "grid1000":
            px = px / np.array([w, h]) * 1000.0
        return [[round(float(x), 4), round(float(y), 4)] for x, y in px]


def as_vlm_subgoal(task: TaskSpec, skill: str, args: Any) -> dict[str, Any]:
    """The oracle's subgoal as the plan schema has it: as many arguments as the VLM parser's arity of the skill
    (:func:`planner_vlm.plan_parser.skill_arity`; the oracle also names a place the skill's words leave implicit,
    e.g. pick_place_bins' ``place(milk, milk_bin)`` is ``place(milk)``)."""
    from planner_vlm.plan_parser import skill_arity

    args = list(args)[: skill_arity(task, skill)]
    return {"skill": skill, "args": args, "text": task.subgoal_text(skill, args)}


def swapped_order(remaining: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``remaining`` with its first two chunks swapped: a chunk is a subgoal and the following ones on the same first
    argument (a pick and its place). With fewer than two chunks, the first two subgoals are swapped."""
    chunks: list[list[dict[str, Any]]] = []
    for sg in remaining:
        first = sg["args"][0] if sg["args"] else None
        if chunks and chunks[-1][0]["args"] and chunks[-1][0]["args"][0] == first:
            chunks[-1].append(sg)
        else:
            chunks.append([sg])
    if len(chunks) >= 2:
        chunks[0], chunks[1] = chunks[1], chunks[0]
        return [sg for c in chunks for sg in c]
    return [remaining[1], remaining[0], *remaining[2:]]


def _quat_x_axis(quat_wxyz: Any) -> np.ndarray:
    w, x, y, z = (float(v) for v in quat_wxyz)
    return np.array([1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)])


def subgoal_points(args: list[str], poses: dict[str, Any], calibration: dict[str, Any],
                   top_offset_m: float) -> np.ndarray | None:
    """The pixels a pointing VLM gives for a subgoal on ``args``: per argument that has a pose, its top centre (the
    origin raised by ``top_offset_m``) and a point on its top face :data:`AXIS_FRACTION` of ``top_offset_m`` along
    its local +x axis (flattened to the horizontal), projected into the camera.

    Args:
        args: the subgoal's arguments (objects and places); those without a pose in ``poses`` (a bin, a peg) are left
            out.
        poses: ``privileged["objects"]``: name -> ``{"pos": (3,) m world, "quat": (4,) wxyz}``.
        calibration: the camera's calibration JSON (:meth:`sim.robosuite_env.RobosuiteEnv.camera_calibration`).
        top_offset_m: the height (m) of the top face above an object's origin.

    Returns:
        ``float64 (2 * n, 2)`` px ``(x, y)`` of the native image, or None where no argument has a pose.
    """
    from planner_vlm.learned.camera import CameraCalibration

    cal = CameraCalibration.from_json(calibration)
    pts = []
    for a in args:
        pose = poses.get(a)
        if not isinstance(pose, dict) or "pos" not in pose:
            continue
        p = np.asarray(pose["pos"], np.float64)
        top = p + np.array([0.0, 0.0, top_offset_m])
        ax = _quat_x_axis(pose.get("quat", (1.0, 0.0, 0.0, 0.0)))
        ax[2] = 0.0
        n = float(np.linalg.norm(ax))
        ax = ax / n if n > 1e-9 else np.array([1.0, 0.0, 0.0])
        pts += [top, top + AXIS_FRACTION * top_offset_m * ax]
    if not pts:
        return None
    px = cal.project(np.stack(pts))
    if not np.all(np.isfinite(px)):
        return None
    return px


# ------------------------------------------------------------------------------------------- HTTP
def make_server(sim: OracleSimVLM, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """The HTTP server of ``sim`` on ``host:port`` (0: a free port; read ``server.server_address``); call
    ``serve_forever()`` (or :func:`start_in_thread`)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, obj: dict[str, Any]) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": MODEL_NAME, "object": "model",
                                                             "owned_by": "tandem (privileged oracle)"}]})
            elif self.path.startswith("/oracle/stats"):
                self._send(200, {"knobs": asdict(sim.knobs), "stats": dict(sim.stats)})
            else:
                self._send(404, {"error": {"message": f"no GET {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("the body is not a JSON object")
            except (ValueError, UnicodeDecodeError) as e:
                self._send(400, {"error": {"message": f"bad JSON body: {e}"}})
                return
            if self.path.startswith("/oracle/truth"):
                try:
                    sim.post_truth(body)
                except Exception as e:  # noqa: BLE001 - the poster gets the reason
                    self._send(409 if isinstance(e, TruthConflict) else 400,
                               {"error": {"message": f"{type(e).__name__}: {e}"}})
                    return
                self._send(200, {"ok": True})
            elif self.path.rstrip("/").endswith("/chat/completions"):
                try:
                    status, out = sim.chat(body)
                except Exception as e:  # noqa: BLE001 - a server error is an answer, never a dead server
                    status, out = 500, {"error": {"message": f"{type(e).__name__}: {e}"}}
                self._send(status, out)
            else:
                self._send(404, {"error": {"message": f"no POST {self.path}"}})

    return ThreadingHTTPServer((host, port), Handler)


def start_in_thread(sim: OracleSimVLM, host: str = "127.0.0.1", port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Serve ``sim`` from a daemon thread; returns ``(server, base_url)`` with ``base_url`` ending in ``/v1``. Stop
    with ``server.shutdown(); server.server_close()``."""
    server = make_server(sim, host, port)
    threading.Thread(target=server.serve_forever, daemon=True, name="oracle-sim-vlm").start()
    h, p = str(server.server_address[0]), int(server.server_address[1])
    return server, f"http://{h}:{p}/v1"


# ------------------------------------------------------------------------------------------- the truth channel
def truth_url(base_url: str) -> str:
    """``http://host:port/oracle/truth`` from a server's ``base_url`` (with or without ``/v1``).

    Raises:
        ConfigError: not an http(s) URL (names ``oracle_truth_url``).
    """
    if not isinstance(base_url, str) or not re.match(r"^https?://", base_url):
        raise ConfigError(f"oracle_truth_url must be an http(s) URL of an oracle-sim VLM server, got {base_url!r}")
    root = re.sub(r"/v1/?$", "", base_url.rstrip("/"))
    return f"{root}/oracle/truth"


class OracleTruthPublisher:
    """SIM-ONLY oracle helper the agent holds (``truth_sink``): posts the simulator's truth of each observation to an
    oracle-sim VLM server (the module docstring's payload). It is an oracle: a stack with one is privileged.

    Args:
        url: the server's ``base_url`` (``http://127.0.0.1:8766/v1``) or root.
        calibration: camera name -> its calibration JSON (posted with every step; the env's).
        timeout_s: per-post timeout (s).
    """

    is_oracle: ClassVar[bool] = True
    role: ClassVar[str] = "truth channel (oracle-sim VLM)"

    def __init__(self, url: str, calibration: dict[str, Any], timeout_s: float = 30.0):
        self.url = truth_url(url)
        self.calibration = calibration
        self.timeout_s = float(timeout_s)
        self.episode = ""
        self.task: TaskSpec | None = None

    def reset(self, task: TaskSpec) -> None:
        """A new episode of ``task`` (its judge's goals are posted)."""
        self.task = task
        self.episode = uuid.uuid4().hex

    def publish(self, observation: Observation) -> None:
        """Post ``observation``'s truth (its full ``privileged``).

        Raises:
            ConfigError: no ``reset`` yet; the server cannot be reached or refuses the truth (one line, the URL).
        """
        if self.task is None:
            raise ConfigError("OracleTruthPublisher.publish before reset")
        payload = {"episode": self.episode, "step": int(observation.step), "task": self.task.name,
                   "instruction": self.task.instruction, "goals": list(self.task.goals),
                   "privileged": to_jsonable(dict(observation.privileged or {})), "calibration": self.calibration}
        req = urllib.request.Request(self.url, data=json.dumps(payload).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                resp.read()
        except urllib.error.HTTPError as e:
            detail = e.read()[:300].decode("utf-8", "replace") if e.fp is not None else ""
            raise ConfigError(f"oracle_truth_url: {self.url} refused the truth: HTTP {e.code} {detail}") from e
        except (urllib.error.URLError, OSError) as e:
            raise ConfigError(f"oracle_truth_url: cannot reach the oracle-sim VLM at {self.url}: {e}") from e


__all__ = ["MODEL_NAME", "OracleSimVLM", "OracleTruthPublisher", "SimVLMKnobs", "TruthConflict", "as_vlm_subgoal", "make_server", "start_in_thread",
           "subgoal_points", "swapped_order", "truth_url"]
