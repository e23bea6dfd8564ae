"""Finding and loading libattn, and the C API mirrored for ctypes.

The declarations follow runtime/include/attn/runtime/attn.h; every field of
attn_spec, attn_tensor and attn_launch_args is listed in order, so ctypes
lays the structs out as the C compiler does. Nothing is loaded at import:
the library is found on the first call that needs it (load()).
"""
import ctypes
import ctypes.util
import os
import struct
import threading

# --- attn.h ------------------------------------------------------------------
OK = 0
STATUS_NAMES = {
    1: "ATTN_ERROR_INVALID_ARGUMENT",
    2: "ATTN_ERROR_UNSUPPORTED",
    3: "ATTN_ERROR_COMPILE",
    4: "ATTN_ERROR_BACKEND",
    5: "ATTN_ERROR_UNAVAILABLE",
    6: "ATTN_ERROR_OUT_OF_MEMORY",
}
DTYPE_F16, DTYPE_BF16, DTYPE_F32, DTYPE_BOOL = 1, 2, 3, 4
MASK_NONE, MASK_BOOL, MASK_ADDITIVE = 0, 1, 2
TARGETS = {"cpu": 0, "cuda": 1, "vulkan": 2}
DYNAMIC = -1


class Spec(ctypes.Structure):
    # Enums are C ints; ctypes inserts the C compiler's padding.
    _fields_ = [
        ("dtype", ctypes.c_int),
        ("batch", ctypes.c_int64),
        ("heads_q", ctypes.c_int64),
        ("heads_kv", ctypes.c_int64),
        ("seq_q", ctypes.c_int64),
        ("seq_kv", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("value_dim", ctypes.c_int64),
        ("causal", ctypes.c_int),
        ("mask", ctypes.c_int),
        ("mask_dtype", ctypes.c_int),
        ("scale", ctypes.c_double),
        ("dropout_p", ctypes.c_double),
        ("return_lse", ctypes.c_int),
        ("variant", ctypes.c_int),
        ("block_q", ctypes.c_int64),
        ("block_kv", ctypes.c_int64),
        ("kv_splits", ctypes.c_int64),
    ]


class Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("shape", ctypes.c_int64 * 4),
        ("strides", ctypes.c_int64 * 4),
    ]


class LaunchArgs(ctypes.Structure):
    _fields_ = [
        ("q", Tensor),
        ("k", Tensor),
        ("v", Tensor),
        ("mask", Tensor),
        ("out", Tensor),
        ("lse", Tensor),
        ("seed", ctypes.c_uint64),
        ("stream", ctypes.c_void_p),
    ]


class MhaSpec(ctypes.Structure):
    _fields_ = [
        ("dtype", ctypes.c_int),
        ("batch", ctypes.c_int64),
        ("seq", ctypes.c_int64),
        ("embed", ctypes.c_int64),
        ("heads_q", ctypes.c_int64),
        ("heads_kv", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("value_dim", ctypes.c_int64),
        ("cross", ctypes.c_int),
        ("seq_kv", ctypes.c_int64),
        ("kv_embed", ctypes.c_int64),
        ("fused_qkv", ctypes.c_int),
        ("bias", ctypes.c_int),
        ("causal", ctypes.c_int),
        ("scale", ctypes.c_double),
    ]


MHA_POINTERS = ("x", "kv", "w_q", "w_k", "w_v", "w_qkv", "w_o", "b_q", "b_k",
                "b_v", "b_qkv", "b_o", "y", "stream")


class MhaArgs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_void_p) for n in MHA_POINTERS]


# One launch's attn_launch_args packed with a single struct.pack: six
# tensors (data, shape[4], strides[4]), seed, stream. Every field is 8
# bytes, so there is no padding (checked below); this is what
# examples/attn_ctypes.py does, the cheap per-call path.
_LAUNCH = struct.Struct("=" + "Q4q4q" * 6 + "QQ")
assert _LAUNCH.size == ctypes.sizeof(LaunchArgs)
NO_TENSOR = (0,) * 9


def pack_launch_args(q, k, v, mask, out, lse, seed, stream):
    """Each tensor a 9-tuple (data, shape x4, strides x4) or NO_TENSOR."""
    return LaunchArgs.from_buffer_copy(
        _LAUNCH.pack(*q, *k, *v, *mask, *out, *lse, seed, stream or 0))


# --- finding the library -------------------------------------------------------
# Sonames tried through the loader, newest first: an installed libattn has
# the SOVERSION'd name (libattn.so.0); a build tree or an older install
# only the plain one.
LOADER_NAMES = ("libattn.so.0", "libattn.so")


def _source_tree_library():
    """build/lib/libattn.so of the checkout this package sits in, when it is
    imported from the source tree (python/attn/ beside the CMake project)."""
    here = os.path.dirname(os.path.realpath(__file__))  # a symlinked checkout too
    root = os.path.dirname(os.path.dirname(here))
    if not (os.path.isfile(os.path.join(root, "CMakeLists.txt")) and
            os.path.isfile(os.path.join(root, "python", "pyproject.toml"))):
        return None
    build = os.environ.get("ATTN_BUILD_DIR") or os.path.join(root, "build")
    if not os.path.isabs(build):
        build = os.path.join(root, build)
    return os.path.join(build, "lib", "libattn.so")


def candidates():
    """Where load() looks, in order: (description, path-or-name)."""
    out = []
    env = os.environ.get("ATTN_LIBRARY")
    if env:
        out.append(("ATTN_LIBRARY", env))
    src = _source_tree_library()
    if src:
        out.append(("the source tree's build", src))
    for name in LOADER_NAMES:
        out.append(("the dynamic loader (LD_LIBRARY_PATH, ldconfig)", name))
    found = ctypes.util.find_library("attn")
    if found and found not in LOADER_NAMES:
        out.append(("ctypes.util.find_library('attn')", found))
    return out


class LibraryNotFound(OSError):
    pass


_lock = threading.Lock()
_lib = None
_path = None


def _declare(lib):
    c_int, c_void_p = ctypes.c_int, ctypes.c_void_p
    lib.attn_spec_init.argtypes = [ctypes.POINTER(Spec)]
    lib.attn_spec_init.restype = None
    lib.attn_context_create.argtypes = [ctypes.POINTER(c_void_p)]
    lib.attn_context_create.restype = c_int
    lib.attn_context_destroy.argtypes = [c_void_p]
    lib.attn_context_destroy.restype = None
    lib.attn_target_available.argtypes = [c_void_p, c_int]
    lib.attn_target_available.restype = c_int
    lib.attn_compile.argtypes = [c_void_p, ctypes.POINTER(Spec), c_int,
                                 ctypes.POINTER(c_void_p)]
    lib.attn_compile.restype = c_int
    lib.attn_launch.argtypes = [c_void_p, ctypes.POINTER(LaunchArgs)]
    lib.attn_launch.restype = c_int
    lib.attn_context_cache_size.argtypes = [c_void_p]
    lib.attn_context_cache_size.restype = ctypes.c_size_t
    lib.attn_last_error.argtypes = []
    if hasattr(lib, "attn_mha_compile"):  # libattn 0.1.0 of 2026-11-26 on
        lib.attn_mha_spec_init.argtypes = [ctypes.POINTER(MhaSpec)]
        lib.attn_mha_spec_init.restype = None
        lib.attn_mha_compile.argtypes = [c_void_p, ctypes.POINTER(MhaSpec),
                                         c_int, ctypes.POINTER(c_void_p)]
        lib.attn_mha_compile.restype = c_int
        lib.attn_mha_launch.argtypes = [c_void_p, ctypes.POINTER(MhaArgs)]
        lib.attn_mha_launch.restype = c_int
    lib.attn_last_error.restype = ctypes.c_char_p
    lib.attn_status_string.argtypes = [c_int]
    lib.attn_status_string.restype = ctypes.c_char_p
    # attn_version() is new (0.1.0); an older library lacks it.
    if hasattr(lib, "attn_version"):
        lib.attn_version.argtypes = []
        lib.attn_version.restype = ctypes.c_char_p


def load():
    """The loaded library (ctypes.CDLL), found as candidates() says.
    Raises LibraryNotFound listing every place tried and why it failed."""
    global _lib, _path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for where, path in candidates():
            if os.sep in path and not os.path.exists(path):
                tried.append("%s: %s (no such file)" % (where, path))
                if where == "ATTN_LIBRARY":
                    break  # an explicit choice: do not fall back silently
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append("%s: %s (%s)" % (where, path, e))
                if where == "ATTN_LIBRARY":
                    break
                continue
            if not hasattr(lib, "attn_compile"):
                tried.append("%s: %s (no attn_compile: not libattn)"
                             % (where, path))
                if where == "ATTN_LIBRARY":
                    break
                continue
            _declare(lib)
            _lib, _path = lib, path
            return lib
        raise LibraryNotFound(
            "attn: cannot load libattn. Tried, in order:\n  " +
            "\n  ".join(tried) +
            "\nBuild it (scripts/build.sh: build/lib/libattn.so), install it "
            "(a prefix whose lib/ is on LD_LIBRARY_PATH or in ldconfig's "
            "cache), or set ATTN_LIBRARY to the path of libattn.so (or "
            "libattn_runtime.so for AOT kernels only).")


def path():
    """The path or name the library was loaded from (None before load())."""
    return _path
