"""``tandem-bridge``: run tandem's agent on a robot through the ROS 2 bridge (Hydra).

Examples::

    tandem-bridge --config-name bridge/sim_loopback                    # rehearsal beside tandem-sim-robot
    tandem-bridge --config-name bridge/sim_loopback bridge.dry_run=true   # log commands, send nothing
    tandem-bridge --config-name bridge/franka_moveit_servo executor.checkpoint=ckpt/
    tandem-bridge --config-name bridge/sim_loopback instruction="put the red cube on the blue cube"
    tandem-bridge --config-name bridge/franka_moveit_servo wait_for_instruction=true episodes=5   # from the topic

The task is the user's instruction: ``instruction=`` (else ``bridge.task.instruction``) for the first episode, and one
episode per ``std_msgs/String`` message on ``bridge.topics.instruction`` (``/tandem/instruction``) for each later one
(every one with ``wait_for_instruction=true``), over the cell vocabulary ``bridge.task.vocabulary`` names
(``configs/bridge/cells/*.yaml``; docs/ros2-bridge.md).

The config's ``bridge`` section (``bridge.config.BridgeConfig``) sets the transport, topics, frames, rate,
action mapping and safety limits; ``planner``, ``verifier`` and ``executor`` pick the agent's parts, built by the
same registry as ``tandem-demo`` (:func:`tandem.runtime.registry.build_bridge_stack`). Writes ``summary.json``,
``episode.jsonl`` and ``safety_events.jsonl`` per episode. Exit status: 0 success, 3 an episode failed, 2 bad input.
"""

from __future__ import annotations

import json
import sys

from tandem.cli.common import fail, hydra_main, load_config, make_output_folder, prepare_runtime

prepare_runtime()


def run(cfg, transport=None) -> dict:
    """Validate ``cfg``, make ``out_dir`` (with Hydra's record; removed again if the input is then refused) and run
    the episodes (:func:`tandem.runtime.bridge_session.run_bridge`)."""
    from tandem.runtime.bridge_session import run_bridge
    from tandem.runtime.config import BridgeRunConfig

    c = load_config(BridgeRunConfig, cfg)
    make_output_folder(c.out_dir, "out_dir")
    return run_bridge(c, transport=transport)


def check_config(cfg):
    """``cfg`` as a checked ``BridgeRunConfig`` (the check before Hydra writes anything).

    Raises:
        ConfigError / UnknownNameError: bad input, naming the key.
    """
    from tandem.runtime.config import BridgeRunConfig

    return load_config(BridgeRunConfig, cfg)


@hydra_main(config_name="bridge/sim_loopback", check=check_config)
def main(cfg) -> None:
    """``tandem-bridge``: run the configured bridge session and print its summary (JSON). Exit 0: success; 3: the
    session ran and failed; 2: bad input, named in one line."""
    try:
        summary = run(cfg)
    except Exception as e:  # noqa: BLE001 - one clear line for tandem errors
        fail(e)
    print(json.dumps(summary, indent=2))
    sys.exit(0 if summary["success"] else 3)


__all__ = ["main", "run"]


if __name__ == "__main__":
    main()
