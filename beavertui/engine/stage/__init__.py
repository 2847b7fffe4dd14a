"""One stage of an attempt on this machine: a fresh work dir, a sandboxed build or test, the harness integrity check."""
