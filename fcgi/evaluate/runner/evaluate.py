"""evaluate.py: the evaluate runner's entry point, run INSIDE the sandbox as
`/usr/bin/python3 -S -B /opt/sbx/evaluate.py` with one JSON job on stdin (see README.md).

Kept tiny because a script is compiled on every start while imported modules load from their
precompiled __pycache__ (made at build time): the work is in sbx_eval.py."""
import os

import sbx_eval

sbx_eval.main()
os._exit(0)  # the answer is written: skip the interpreter's teardown (milliseconds, every request)
