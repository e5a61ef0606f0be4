"""``tandem-sim-robot``: a robosuite task served as a ROS 2 robot on the bridge's transport (rehearsal).

It publishes the env's cameras, gripper joints and end-effector pose as ROS 2-typed messages, executes
received ``TwistStamped``/``GripperCommand`` messages, and serves the SIM-ONLY oracle side channel
(privileged state, success, scripted-expert waypoints). Its judge is the task's reference reading of the
instruction the *bridge* runs, sent at each bridge episode on ``/tandem/oracle/episode``: it never supplies goals
of its own. Run it beside ``tandem-bridge`` with the same config::

    tandem-sim-robot --config-name bridge/sim_loopback                      # terminal 1
    tandem-bridge    --config-name bridge/sim_loopback                      # terminal 2
    tandem-bridge    --config-name bridge/sim_loopback instruction="put the red cube on the green cube"  # short
    tandem-sim-robot --config-name bridge/sim_loopback sim_robot.goals_limit=1   # the judge keeps its first goal

The env is built by :func:`tandem.runtime.registry.build_sim_env` (:mod:`tandem.runtime.bridge_session`).
"""

from __future__ import annotations

from tandem.cli.common import fail, hydra_main, load_config, make_output_folder, prepare_runtime

prepare_runtime()


def run(cfg) -> dict:
    """Validate ``cfg``, make ``out_dir`` (Hydra's record of the run; removed again if the input is then refused) and
    serve the simulated robot until ``sim_robot.duration_s`` / ``publish_for_s`` or Ctrl-C."""
    from tandem.runtime.bridge_session import serve_sim_robot
    from tandem.runtime.config import BridgeRunConfig

    c = load_config(BridgeRunConfig, cfg)
    make_output_folder(c.out_dir, "out_dir")
    return serve_sim_robot(c)


def check_config(cfg):
    """``cfg`` as a checked ``BridgeRunConfig`` (the check before Hydra writes anything).

    Raises:
        ConfigError / UnknownNameError: bad input, naming the key.
    """
    from tandem.runtime.config import BridgeRunConfig

    return load_config(BridgeRunConfig, cfg)


@hydra_main(config_name="bridge/sim_loopback", check=check_config)
def main(cfg) -> None:
    """``tandem-sim-robot``: serve the simulated robot of the bridge config over the configured transport until
    stopped."""
    try:
        out = run(cfg)
    except Exception as e:  # noqa: BLE001 - one clear line for tandem errors
        fail(e)
    print(out)


__all__ = ["main", "run"]


if __name__ == "__main__":
    main()
