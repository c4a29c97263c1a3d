"""Benchmarks of nystrom_kme (results in bench/RESULTS.md). Each script is a module of
this package and runs from the repository root as `python -m bench.<script> [args]`
(`--help` lists its options); the shared helpers are bench.harness (machine, timing,
memory, worker processes, numpy baselines), bench.limits (the machine limits measured
in the same run) and bench.figures (the paper's figures)."""
