# -*- Python -*-
# lit configuration for attn: FileCheck tests of every pass and tool, plus
# execution tests gated by features (vulkan, ptxas, cuda) so the suite says
# what it skipped on machines without them.
import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "ATTN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".c", ".py"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "Inputs", "lib"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attn_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%attn_src", config.attn_src_root))
config.substitutions.append(("%attn_lib", config.attn_lib_dir))
config.substitutions.append(("%attn_obj", config.attn_obj_root))
# The generated references (ninja attn-doc).
config.substitutions.append(("%attn_docs", os.path.join(config.attn_obj_root, "docs")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.attn_tools_dir, config.llvm_tools_dir]
tools = ["attn-opt", "attn-translate", "attn-run"]
for t in os.listdir(config.attn_tools_dir) if os.path.isdir(config.attn_tools_dir) else []:
    if t.startswith("attn-") and t not in tools:
        tools.append(t)
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.attn_tools_dir, append_path=True)

# Optional features.
if config.ptxas and os.path.exists(config.ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas))


def _probe(target):
    """Asks attn-run whether a target can run here (driver + device)."""
    exe = os.path.join(config.attn_tools_dir, "attn-run")
    if not os.path.exists(exe):
        return False
    try:
        r = subprocess.run([exe, "--target=" + target, "--probe"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=120)
        return r.returncode == 0
    except Exception:
        return False


# test/Install builds an external Makefile project through pkg-config.
if shutil.which("pkg-config") and shutil.which("make"):
    config.available_features.add("pkg-config")

# Debian's spirv-tools validator, for the SPIR-V that attn-translate writes.
_spirv_val = shutil.which("spirv-val")
if _spirv_val:
    config.available_features.add("spirv-val")
    config.substitutions.append(("%spirv_val", _spirv_val))

# A Python with NumPy, for the .npy round trips of attn-run --save/--load
# (%numpy_python): lit's own, else the first python3 on PATH or the
# system's that has it.
import sys
for _py in [sys.executable, shutil.which("python3"), "/usr/bin/python3"]:
    if not _py or not os.path.exists(_py):
        continue
    try:
        if subprocess.run([_py, "-c", "import numpy"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, timeout=60).returncode == 0:
            config.available_features.add("numpy")
            config.substitutions.append(("%numpy_python", _py))
            break
    except Exception:
        pass

for target in ("vulkan", "cuda"):
    if _probe(target):
        config.available_features.add(target)

lit_config.note("attn optional features: " + ", ".join(
    f for f in ("ptxas", "spirv-val", "numpy", "vulkan", "cuda") if f in config.available_features)
    + " (missing ones skip their tests)")

# mlir-runner and its support libraries, for execution tests of the lowered
# IR (e.g. the numerical check of convert-attn-to-linalg).
_llvm_prefix = os.path.dirname(config.llvm_tools_dir)
config.substitutions.append(
    ("%mlir_runner_utils_dir", os.path.join(_llvm_prefix, "lib")))
config.substitutions.append(
    ("%mlir_runner", os.path.join(config.llvm_tools_dir, "mlir-runner")))
