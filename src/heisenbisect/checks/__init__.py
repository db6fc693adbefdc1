"""Response checks as plugins: each reads one round's request and reply and may name what is wrong.

The session classes a stress run tallies (besides the workload's own ``ok`` and ``error``) are
the classes the registered checks produce (`registry`). Pure: no I/O; a low layer that the stress
client (`targets.openai`), the server target and the spec's model import.
"""
