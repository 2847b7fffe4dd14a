"""Build output check: run ./axpy.out and require max_err below 1e-5."""
import re
import subprocess
import sys

proc = subprocess.run(["./axpy.out"], capture_output=True, text=True)
sys.stdout.write(proc.stdout)
sys.stderr.write(proc.stderr)
if proc.returncode != 0:
    sys.exit(proc.returncode)
m = re.search(r"max_err (\S+)", proc.stdout)
if not m or float(m.group(1)) > 1e-5:
    print("correctness check FAILED")
    sys.exit(1)
print("correctness check passed")
