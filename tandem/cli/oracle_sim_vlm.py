"""``tandem-oracle-sim-vlm``: serve the PRIVILEGED oracle-sim VLM (:mod:`tandem.runtime.oracle_sim_vlm`), an
OpenAI-compatible server that answers tandem's VLM planner and verifier with the oracle's plans, points and verdicts,
degraded by seeded knobs. SIM-ONLY: it answers only a stack that posts it the simulator's truth
(``oracle_truth_url``); every result made through it is recorded as privileged.

Examples::

    tandem-oracle-sim-vlm port=8766 &
    tandem-demo planner=vlm planner.geometry=pointing planner.base_url=http://127.0.0.1:8766/v1 \\
        planner.model=oracle-sim-vlm verifier=learned executor=diffusion oracle_truth_url=http://127.0.0.1:8766/v1
    tandem-oracle-sim-vlm port=8766 point_sigma_px=4 wrong_object_rate=0.1 verdict_flip_rate=0.1 seed=3

Keys: ``host`` (127.0.0.1), ``port`` (8766), and the knobs of
:class:`~tandem.runtime.oracle_sim_vlm.SimVLMKnobs`: ``point_sigma_px`` (px), ``wrong_object_rate``,
``wrong_order_rate``, ``malformed_rate``, ``refusal_rate``, ``verdict_flip_rate`` (probabilities per request),
``latency_s`` (s), ``seed``, ``point_frame`` (unit | pixels | grid1000; unit matches ``planner.point_frame=auto``
for the model name ``oracle-sim-vlm``), ``top_offset_m`` (m).

Exit status: 2 bad input (one line naming the key; nothing started); 130 stopped by Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tandem.cli.common import prepare_runtime, stop_on_signals
from tandem.cli.ground import parse_kv

prepare_runtime()

KNOB_KEYS = ("point_sigma_px", "wrong_object_rate", "wrong_order_rate", "malformed_rate", "refusal_rate",
             "latency_s", "verdict_flip_rate", "seed", "point_frame", "top_offset_m")
KEYS = ("host", "port", *KNOB_KEYS)


def run(argv: Sequence[str]) -> int:
    """Check ``argv``, then serve until interrupted; the exit status."""
    from tandem.core.errors import ConfigError
    from tandem.runtime.oracle_sim_vlm import MODEL_NAME, OracleSimVLM, SimVLMKnobs, make_server

    args = parse_kv(argv, KEYS)
    knobs = SimVLMKnobs.from_pairs({k: v for k, v in args.items() if k in KNOB_KEYS})
    try:
        port = int(args.get("port", "8766"))
    except ValueError as e:
        raise ConfigError(f"port must be an integer, got {args['port']!r}") from e
    if not 0 <= port <= 65535:
        raise ConfigError(f"port must be in [0, 65535], got {port}")
    host = args.get("host", "127.0.0.1")
    try:
        server = make_server(OracleSimVLM(knobs), host, port)
    except OSError as e:
        raise ConfigError(f"port: cannot listen on {host}:{port}: {e}") from e
    h, p = str(server.server_address[0]), int(server.server_address[1])
    print(f"oracle-sim VLM (PRIVILEGED, sim only) on http://{h}:{p}/v1, model {MODEL_NAME}, knobs {knobs.label()}",
          file=sys.stderr, flush=True)
    stop_on_signals()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        return 130
    finally:
        server.server_close()
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point (``sys.argv[1:]`` by default)."""
    from tandem.cli.common import exit_with

    exit_with(run, argv)


if __name__ == "__main__":
    main()
