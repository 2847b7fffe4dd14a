"""The ranges of the numbers a protocol, a batch and an endpoint configuration may hold.

One source of truth: the models that read protocol files, session headers and models files
(engine/session/protocol.py, engine/models/openai_model.py, batch/protocol_file.py) and the command line's
bounded number types (commands/numbers.py) all take their bounds from here. The module imports nothing,
so that ``beavertui --help`` builds every parser without loading pydantic.
"""

from __future__ import annotations

#: Highest iteration budget K (iterative), or number of samples (repeated), of one session.
MAX_BUDGET = 100
#: Highest speedup gate p a protocol may set: the top of the metrics' p sweep (3x the reference's speed).
MAX_GATE = 3.0
#: Most rounds of prior (request, reply, feedback) turns a conversation keeps.
MAX_HISTORY = 4
#: The most few-shot examples a protocol may ask for (the release's grid goes to 5).
MAX_FEW_SHOT = 20
#: Highest sampling temperature (the OpenAI API's).
MAX_TEMPERATURE = 2.0
#: Highest nucleus sampling mass ``top_p`` (above 0).
MAX_TOP_P = 1.0
#: Most completion tokens a request may ask for.
MAX_TOKENS = 10_000_000
#: Longest per-call time limit (and backoff) a configuration may ask for, in seconds: one day.
MAX_TIMEOUT_S = 86_400.0
#: Most failed tries per call a configuration may allow.
MAX_RETRIES = 100
#: Most independent trajectories per (model, protocol, task) of a batch.
MAX_SAMPLES = 1000
#: Highest seed (sampling seeds sent to an endpoint, bootstrap and draw seeds): numpy's 2^32 - 1.
MAX_SEED = 2**32 - 1
