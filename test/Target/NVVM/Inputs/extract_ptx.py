"""Prints the PTX held by the (only) gpu.binary object of attn-opt's output."""
import re
import sys

text = sys.stdin.read()
m = re.search(r'assembly = "((?:[^"\\]|\\.)*)"', text)
if not m:
    sys.exit("no gpu.binary assembly found")
sys.stdout.write(re.sub(r"\\([0-9A-Fa-f]{2})",
                        lambda x: chr(int(x.group(1), 16)), m.group(1)))
