"""The generic server target: any OpenAI-compatible serving stack, launched, stressed and torn down
per config (SGLang and vLLM are presets of it; docs/servers.md)."""
