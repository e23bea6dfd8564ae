#!/usr/bin/env python3
"""What NVIDIA's Vulkan driver compiled a kernel to (SASS), from its
shader disk cache: ncu profiles no Vulkan dispatch and the driver reports
only statistics (ATTN_VULKAN_PIPELINE_STATS), but its cache keeps the
machine code.

  1. on the GPU machine, one launch per kernel into an empty cache:
       __GL_SHADER_DISK_CACHE_PATH=/tmp/glc __GL_SHADER_DISK_CACHE=1 \\
       __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 \\
         attn-vulkan-aot-test bench X.spv.json 1 0 8
     and bring /tmp/glc back (tar);
  2. here (zstd is in Debian): driver_sass.py extract GLC_DIR OUT_DIR
     writes each cached entry's NVIDIA container (NVDANVVMNVuc ...) that
     holds code as OUT_DIR/entryN.code: the raw instructions, from the
     container's code offset to two instructions past its EXIT;
  3. on the GPU machine (nvdisasm is in its CUDA toolkit, not here):
       nvdisasm -b SM90 entryN.code > entryN.sass

`bench/vulkan/aot_ab.sh run DIR` with SASS=OUT_DIR does all three on
the GPU machine for every label and kernel (its `build` carries zstd).

The container's layout is not documented: its code offset is taken as
header word 20 + 8 bytes, which is where the first instruction of every
kernel looked at (H200, driver 580) starts; step 3 fails on anything
else ("Illegal instruction" or "truncated").
"""
import glob
import os
import struct
import subprocess
import sys

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CONTAINER = b"NVDANVVMNVuc"
EXIT = bytes.fromhex("4d79000000000000")  # EXIT's low 64 bits (sm_90)


def frames(blob):
    """The zstd frames of a cache file (split at each frame's magic)."""
    at = []
    i = blob.find(ZSTD_MAGIC)
    while i >= 0:
        at.append(i)
        i = blob.find(ZSTD_MAGIC, i + 4)
    for n, start in enumerate(at):
        yield blob[start:at[n + 1] if n + 1 < len(at) else len(blob)]


def decompress(frame):
    # zstd decodes the frame and stops at the bytes after it (the next
    # entry's header), exiting non-zero; what it wrote is the frame.
    r = subprocess.run(["zstd", "-d", "-c", "-q"], input=frame,
                       capture_output=True)
    return r.stdout


def code_of(raw):
    if not raw.startswith(CONTAINER) or len(raw) < 21 * 4:
        return None
    start = struct.unpack_from("<I", raw, 20 * 4)[0] + 8
    end = raw.find(EXIT, start)
    if end < 0 or (end - start) % 16:
        return None
    return raw[start:end + 32]


def extract(cache_dir, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    n = 0
    for path in sorted(glob.glob(os.path.join(cache_dir, "**", "*.bin"),
                                 recursive=True)):
        for frame in frames(open(path, "rb").read()):
            code = code_of(decompress(frame))
            if code is None:
                continue
            out = os.path.join(out_dir, f"entry{n}.code")
            open(out, "wb").write(code)
            print(f"{out}: {len(code) // 16} instructions "
                  f"(from {os.path.relpath(path, cache_dir)})")
            n += 1
    if not n:
        sys.exit(f"driver_sass.py: no code found under {cache_dir}")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "extract":
        sys.exit(__doc__)
    extract(sys.argv[2], sys.argv[3])
