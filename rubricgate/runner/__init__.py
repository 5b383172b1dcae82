"""The execution engine: workspaces, processes, scheduling."""
