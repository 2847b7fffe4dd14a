"""Run the binary under compute-sanitizer memcheck; fail on any reported error."""
import subprocess
import sys

proc = subprocess.run(["compute-sanitizer", "--tool", "memcheck", "--error-exitcode", "86", *sys.argv[1:]])
sys.exit(proc.returncode)
