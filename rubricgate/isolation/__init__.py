"""One agent process in its box: bubblewrap sandbox, overlay mounts, the minimal environment,
the process group and its timeout, capped output streams, the launch admission.

The lowest layer that runs anything; agents/ call it, runner/ schedules it.

May import: secrets, errors (nothing from the stages above).
"""
