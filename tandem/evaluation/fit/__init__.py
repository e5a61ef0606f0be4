"""``tandem-fit``: from a task's definition to its trained, evaluated learned stack, as one resumable pipeline.

A *recipe* (``configs/fit/<task>.yaml``, :mod:`.recipe`) lists the stages: collection, perception models, fits,
trace model, executor, evaluation. Each stage is one tandem command with the stages it needs. :mod:`.runner` runs
the stages as subprocesses, up to ``workers`` at a time as their needs finish (one thread each), skips stages that
already finished with the same command (so a rerun resumes after an interruption), and records each stage's wall
and CPU time. :mod:`.report` writes ``report.json`` and ``report.md``: each stage's own held-out figures (from the
``summary.json`` it wrote), the closed-loop table, and the time per stage.
"""
