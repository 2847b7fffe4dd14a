"""This machine: the GPU probe, adapting task commands to it, and the sandbox every stage runs in."""
