"""The simulator behind eaglelog's calibration (docs/simulation.md): simulated SGLang and vLLM
server runs with a known truth, written as logs or exposed as /metrics.  It serves the tests,
the benchmarks and the docs, not the command line, so it lives beside the package, not in it
(issue 38): `from simlab.simulate import simulate, SCENARIOS` from the repository's root."""
