"""Flag registries of serving stacks (SGLang's launch arguments, vLLM's env flags), read by
parsing their source with `ast`, never by importing it (that needs their GPU stack)."""
