"""Who the agent is inside the sandbox: one user, `sandbox`, and the passwd and group naming it."""

from __future__ import annotations

SANDBOX_UID = 1000
SANDBOX_HOME = "/home/sandbox"  # only in passwd: the agent's HOME variable names its scratch HOME
# The sandbox's /etc/passwd and /etc/group: no host account, no /etc/shadow. Written into the
# run's staged /etc (etc_folder.py), or mounted from pipes where none is staged (rootfs.py).
IDENTITY = {"/etc/passwd": f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:{SANDBOX_HOME}:/bin/sh\n",
            "/etc/group": f"sandbox:x:{SANDBOX_UID}:\n"}
