"""The repair loop: prompts and feedback, code extraction, the stagnation detectors and the front-end controls."""
