"""The generic server target: any OpenAI-compatible serving stack (`heisenbisect.stacks`), launched,
stressed and torn down per config (docs/servers.md)."""
