"""Runs the README's quick-start block (the fenced sh block after the line
`<!-- quickstart -->`) exactly as written, in a scratch directory that
looks like the repository root (examples/, python/, build/ linked in), with
HOME a fresh directory and python3 the interpreter given (one with NumPy).

usage: run_quickstart.py README SRC_ROOT BUILD_DIR SCRATCH PYTHON
"""
import os
import re
import shutil
import subprocess
import sys

readme, src, build, scratch, python = sys.argv[1:6]
text = open(readme).read()
m = re.search(r"<!-- quickstart -->\n```sh\n(.*?)\n```", text, re.S)
if not m:
    sys.exit("run_quickstart: no ```sh block after <!-- quickstart --> in " + readme)
block = m.group(1)
shutil.rmtree(scratch, ignore_errors=True)
work, home, shim = (os.path.join(scratch, d) for d in ("work", "home", "bin"))
for d in (work, home, shim):
    os.makedirs(d)
for name in ("examples", "python"):
    os.symlink(os.path.join(src, name), os.path.join(work, name))
os.symlink(build, os.path.join(work, "build"))
os.symlink(python, os.path.join(shim, "python3"))
env = dict(os.environ, HOME=home, PATH=shim + os.pathsep + os.environ["PATH"],
           PYTHONDONTWRITEBYTECODE="1")
for var in ("PYTHONPATH", "ATTN_LIBRARY", "PKG_CONFIG_PATH", "LD_LIBRARY_PATH"):
    env.pop(var, None)
print(block, flush=True)
sys.exit(subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work,
                        env=env).returncode)
