"""The session file format's version: what this beavertui writes, and what it reads."""

FORMAT_VERSION = 2
"""2: timing and scheduling facts are typed fields of TimingResult (runs and builds stopped, idle seconds,
timed again, the kernelbench driver's phases, re-measured), and a flag is a name with its detail (Flag). A
version-1 file still reads: legacy.py maps its notes and ``name: detail`` strings into those fields."""

#: The versions this beavertui reads.
READABLE_VERSIONS = (1, 2)
