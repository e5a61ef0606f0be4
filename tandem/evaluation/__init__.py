"""tandem's evaluation layer: suites x seeds x perturbations x stack variants -> one row per episode.

* :mod:`tandem.evaluation.suite`: the suite and variant schema, expanded into episode jobs;
* :mod:`tandem.evaluation.rows`: the results row of an episode and its failure kind;
* :mod:`tandem.evaluation.runner`: one episode in this process (:func:`~tandem.evaluation.runner.run_job`) and the
  whole run (:func:`~tandem.evaluation.runner.evaluate`);
* :mod:`tandem.evaluation.backends`: where episodes run (inline, a local process pool, Ray);
* :mod:`tandem.evaluation.store`: the results folder (append-only part file, parquet, resume);
* :mod:`tandem.evaluation.statistics`: success rates with intervals, ratios, metrics;
* :mod:`tandem.evaluation.report`: plots, the Markdown table and the A/B comparison.

It builds stacks only through :mod:`tandem.runtime.registry`.
"""
