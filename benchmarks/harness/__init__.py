"""The benchmark harness of localbo: objectives, runners (policy API, HTTP service, Optuna) and reports.

- ``harness.objectives``: a registry of test functions (GIBO's GP-sampled functions ``gp25``,
  ``gp50``, ``gp100``; ``branin``, ``hartmann6``, ``ackley``, ``rosenbrock`` from botorch; the
  Lipschitz-BO paper's ``sixhumpcamel``, ``goldsteinprice``, ``hartmann3``, ``michalewicz<d>``), all minimised.
- ``harness.runners``: ``run(RunSpec(...))`` drives one method on one objective for one seed and
  records every evaluation (noisy value, noise-free value, best so far, incumbent value).
- ``harness.report``: the CSV, the markdown table and the PNG plots.

The command lines are ``benchmarks/synthetic.py`` and ``benchmarks/lipschitz.py`` (see their
docstrings). To use the package from Python, put ``benchmarks/`` on ``sys.path``::

    import sys; sys.path.insert(0, "benchmarks")
    from harness.runners import RunSpec, run
    result = run(RunSpec("branin", "sobol", "direct", seed=0, evals=20))
"""
