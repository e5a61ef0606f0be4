"""Run a fit recipe's stages as subprocesses: up to ``workers`` at a time, resumable, timed.

Each stage runs with one thread (``OMP_NUM_THREADS=1``, ``MKL_NUM_THREADS=1``), its output in
``<out>/fit/logs/<stage>.log``. A stage that exits 0 leaves ``<out>/fit/stages/<stage>.json`` (its command, wall
time in s, CPU time in s of the stage and every process it waited for, from ``os.wait4``); a rerun skips a stage
whose record holds the same command, so an interrupted fit resumes at the first unfinished stage (the tandem
commands themselves resume inside a stage where they can, e.g. ``tandem-collect``). A stage that fails blocks the
stages that need it; the others still run. Progress is one line per stage start and end on stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from tandem.core.errors import ConfigError
from tandem.evaluation.fit.recipe import Recipe, Stage

#: How often (s) the runner polls its running stages.
POLL_S = 0.2


@dataclass
class StageResult:
    """What one stage did in this run.

    Attributes:
        name: the stage. status: ``"done"`` (ran, exit 0 or a status its stage accepts), ``"resumed"`` (finished
            in an earlier run: skipped), ``"failed"`` (non-zero exit), ``"blocked"`` (a stage it needs failed), ``"interrupted"``.
        rc: exit status, or None. wall_s, cpu_s: seconds (for ``resumed``: the earlier run's).
        log: the stage's log file. argv: the command run.
    """

    name: str
    status: str
    rc: int | None
    wall_s: float
    cpu_s: float
    log: str
    argv: list[str]


def resolve(argv: list[str]) -> list[str]:
    """The command to execute for a stage's words: ``python`` is this interpreter; ``tandem-*`` is the console script
    beside it (the same environment), else on PATH.

    Raises:
        ConfigError: a command that cannot be found (names it).
    """
    head = argv[0]
    if head in ("python", "python3"):
        return [sys.executable, *argv[1:]]
    beside = Path(sys.executable).parent / head
    if beside.exists():
        return [str(beside), *argv[1:]]
    found = shutil.which(head)
    if found is None:
        raise ConfigError(f"fit stage command {head!r} is not installed (neither beside {sys.executable} nor on PATH)")
    return [found, *argv[1:]]


class FitRunner:
    """Runs a :class:`Recipe` for one task into one run folder.

    Args:
        recipe: the recipe. task: the task to fit. out: the run folder (``{out}`` in the commands).
        workers: stages run at once (>= 1). log: where progress lines go.

    Raises:
        ConfigError: ``workers`` < 1, or a stage whose command cannot be found (checked before anything runs).
    """

    def __init__(self, recipe: Recipe, task: str, out: Path, workers: int = 2, log: TextIO | None = None) -> None:
        if workers < 1:
            raise ConfigError(f"workers={workers}: must be >= 1")
        self.recipe, self.task, self.out, self.workers = recipe, task, Path(out), int(workers)
        self.log = log if log is not None else sys.stderr
        self.argvs: dict[str, list[str]] = {}
        for st in recipe.stages:  # the command word never holds a placeholder: check it before anything runs
            resolve(shlex.split(st.run)[:1])

    def summaries(self) -> dict[str, Any]:
        """Stage name -> the summary JSON it wrote (for ``{<stage>.<key>}``), where it wrote one."""
        out: dict[str, Any] = {}
        for st in self.recipe.stages:
            if st.summary:
                with contextlib.suppress(OSError, ValueError):  # not written yet, or being written
                    out[st.name] = json.loads((self.out / st.summary).read_text())
        return out

    def argv_of(self, st: Stage) -> list[str] | None:
        """The stage's command now, or None while a summary it reads is not written yet."""
        try:
            self.argvs[st.name] = st.argv(self.task, self.out, self.summaries())
        except ConfigError:
            return None
        return self.argvs[st.name]

    # ---- records
    def record_path(self, stage: str) -> Path:
        """``<out>/fit/stages/<stage>.json``: the record of a finished stage."""
        return self.out / "fit" / "stages" / f"{stage}.json"

    def finished_before(self, stage: Stage) -> StageResult | None:
        """The earlier run's result of ``stage`` if it finished with the same command, else None."""
        p = self.record_path(stage.name)
        try:
            rec = json.loads(p.read_text())
        except (OSError, ValueError):
            return None
        rc = rec.get("rc")
        if rec.get("argv") != self.argv_of(stage) or not stage.finished_with(rc):
            return None
        return StageResult(stage.name, "resumed", rc, float(rec.get("wall_s", 0.0)), float(rec.get("cpu_s", 0.0)),
                           str(rec.get("log", "")), self.argvs[stage.name])

    def _say(self, line: str) -> None:
        print(f"[fit] {line}", file=self.log, flush=True)

    # ---- the run
    def run(self) -> list[StageResult]:
        """Run every stage not finished before; returns one result per stage, in recipe order.

        On KeyboardInterrupt the running stages are stopped (SIGTERM, then SIGKILL after 10 s), marked
        ``interrupted``, and the interrupt is raised again.
        """
        (self.out / "fit" / "logs").mkdir(parents=True, exist_ok=True)
        (self.out / "fit" / "stages").mkdir(parents=True, exist_ok=True)
        results: dict[str, StageResult] = {}
        for st in self.recipe.stages:
            before = self.finished_before(st)
            if before is not None:
                results[st.name] = before
                self._say(f"{st.name}: finished in an earlier run, skipped")
        running: dict[str, tuple[subprocess.Popen, float, Path]] = {}
        total = len(self.recipe.stages)
        try:
            while True:
                for st in self.recipe.stages:
                    if st.name in results or st.name in running:
                        continue
                    need_status = [results[n].status if n in results else None for n in st.needs]
                    if any(s in ("failed", "blocked", "interrupted") for s in need_status):
                        results[st.name] = StageResult(st.name, "blocked", None, 0.0, 0.0, "",
                                                       self.argvs.get(st.name, []))
                        self._say(f"{st.name}: blocked (a stage it needs failed)")
                        continue
                    if len(running) < self.workers and all(s in ("done", "resumed") for s in need_status):
                        if self.argv_of(st) is None:
                            results[st.name] = StageResult(st.name, "failed", None, 0.0, 0.0, "", [])
                            self._say(f"{st.name}: FAILED (a summary value it reads is missing: "
                                      f"{', '.join(st.references())})")
                            continue
                        running[st.name] = self._start(st)
                        self._say(f"{st.name}: started ({len(results) + len(running)}/{total})")
                if not running:
                    break
                time.sleep(POLL_S)
                for name, (proc, t0, log) in list(running.items()):
                    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                    if pid == 0:
                        continue
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    del running[name]
                    results[name] = self._finish(name, proc.returncode, time.monotonic() - t0,
                                                 usage.ru_utime + usage.ru_stime, log)
        except KeyboardInterrupt:
            for proc, _, _ in running.values():
                proc.send_signal(signal.SIGTERM)
            for name, (proc, t0, log) in running.items():
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                results[name] = StageResult(name, "interrupted", proc.returncode, time.monotonic() - t0, 0.0,
                                            str(log), self.argvs[name])
                self._say(f"{name}: interrupted (a rerun resumes)")
            raise
        return [results[s.name] for s in self.recipe.stages]

    def _start(self, st: Stage) -> tuple[subprocess.Popen, float, Path]:
        log = self.out / "fit" / "logs" / f"{st.name}.log"
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        handle = log.open("w")
        handle.write(f"$ {' '.join(self.argvs[st.name])}\n")
        handle.flush()
        proc = subprocess.Popen(resolve(self.argvs[st.name]), stdout=handle, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL)
        handle.close()
        return proc, time.monotonic(), log

    def _finish(self, name: str, rc: int, wall_s: float, cpu_s: float, log: Path) -> StageResult:
        finished = self.recipe.stage(name).finished_with(rc)
        res = StageResult(name, "done" if finished else "failed", rc, round(wall_s, 2), round(cpu_s, 2), str(log),
                          self.argvs[name])
        if finished:
            self.record_path(name).write_text(json.dumps({**asdict(res), "finished": time.time()}, indent=2))
            note = f" (exit {rc}, accepted)" if rc else ""
            self._say(f"{name}: done{note} in {wall_s / 60:.1f} min wall, {cpu_s / 60:.1f} min CPU")
        else:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
            self._say(f"{name}: FAILED (exit {rc}; log {log}){': ' + tail[0] if tail else ''}")
        return res
