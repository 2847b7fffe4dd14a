"""Run the test binary under compute-sanitizer memcheck; fail on any reported error."""
import subprocess
import sys

cmd = ["compute-sanitizer", "--tool", "memcheck", "--error-exitcode", "86", *sys.argv[1:]]
proc = subprocess.run(cmd)
if proc.returncode == 86:
    print("compute-sanitizer reported memory errors")
sys.exit(proc.returncode)
