"""The C accelerators: the scanner's (eaglelog/parsers/_fastscan.c) and the rate model's passes
over every window (eaglelog/analysis/_ratekern.c); and eaglelog/_memguard.c, memory kept back
under an address-space limit.  Everything else is in pyproject.toml.  All are optional: without
a C compiler the package installs, reads every log with the Python parser alone and fits with
numpy, several times more slowly (and keeps no memory back)
(`python -c "from eaglelog.parsers import scan; print(scan.fast_available())"` and
`python -c "from eaglelog.analysis import rate; print(rate.fast_available())"` say which)."""
from setuptools import Extension, setup

setup(ext_modules=[
    Extension("eaglelog.parsers._fastscan", ["eaglelog/parsers/_fastscan.c"],
              extra_compile_args=["-O2"], optional=True),
    # (no fused multiply-add: its elementwise passes give numpy's numbers to the bit)
    Extension("eaglelog.analysis._ratekern", ["eaglelog/analysis/_ratekern.c"],
              extra_compile_args=["-O2", "-ffp-contract=off"], optional=True),
    # (memory kept back for the report of running out of it: eaglelog/_memory.keep_reserve)
    Extension("eaglelog._memguard", ["eaglelog/_memguard.c"], extra_compile_args=["-O2"],
              optional=True)])
