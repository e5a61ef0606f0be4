"""A test-only fake of an OpenAI-compatible VLM server: it answers every plan request with a FIXED plan given on its
command line, split into done and remaining by the subgoal outcomes the prompt's task memory reports. It reads no
image and knows nothing of the scene: it is a stand-in for the planning model in plumbing checks of
``planner=vlm`` (e.g. the hybrid mode, ``planner.geometry=learned``), never a planner.

    python tests/fake_vlm_server.py --port 8765 --plan pick:blue stack:blue,red pick:green stack:green,blue &
    python -m tandem.cli.demo planner=vlm planner.geometry=learned planner.backend=openai \\
        planner.base_url=http://127.0.0.1:8765/v1 planner.model=fake planner.point_frame=pixels ...

Its answer: the plan's longest prefix whose subgoals' last outcome in the memory view (``last_outcome``, by
signature ``skill(args)``) is ``success`` is done, the rest remaining, ``next_trace`` null (no 2-D trace). One
retry rule: where the first subgoal not done failed and the one before it is a pick that has not been retried since
(its attempts, ``attempts``, no more than the failed one's), that pick is remaining again (the object may have
dropped). A real VLM would see from the images what holds.
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from planner_vlm.prompting import memory_in_prompt


def parse_step(text: str) -> tuple[str, list[str]]:
    """``"stack:blue,red"`` -> ``("stack", ["blue", "red"])``."""
    skill, _, args = text.partition(":")
    return skill, [a for a in args.split(",") if a]


def prompt_text(body: dict[str, Any]) -> str:
    """The text parts of the request's last user message."""
    user = [m for m in body.get("messages", []) if m.get("role") == "user"][-1]
    content = user.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")


def signature(step: tuple[str, list[str]]) -> str:
    return f"{step[0]}({','.join(step[1])})"


def answer(plan: list[tuple[str, list[str]]], prompt: str) -> str:
    """The plan reply (JSON text) for ``prompt``, as the module docstring says."""
    view = memory_in_prompt(prompt)
    outcomes, attempts = view.last_outcome, view.attempts
    done = 0
    while done < len(plan) and outcomes.get(signature(plan[done])) == "success":
        done += 1
    if (0 < done < len(plan) and outcomes.get(signature(plan[done])) == "failure" and plan[done - 1][0] == "pick"
            and attempts.get(signature(plan[done]), 0) >= attempts.get(signature(plan[done - 1]), 0)):
        done -= 1  # grasp the object again before the retry
    sg = [{"skill": s, "args": a, "text": f"{s} {' '.join(a)}"} for s, a in plan]
    return json.dumps({"rationale": "fake VLM: a fixed plan, split by the memory's outcomes", "done": sg[:done],
                       "remaining": sg[done:], "next_trace": None})


def serve(port: int, plan: list[tuple[str, list[str]]]) -> None:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            reply = {"id": "fake", "object": "chat.completion", "model": body.get("model", "fake"),
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": answer(plan, prompt_text(body))}}]}
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--plan", nargs="+", required=True, help="skill:arg1,arg2 ... in order")
    args = p.parse_args()
    serve(args.port, [parse_step(s) for s in args.plan])


if __name__ == "__main__":
    main()
