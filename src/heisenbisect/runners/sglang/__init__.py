"""The built-in SGLang target: a server per config, tool-calling stress sessions, corruption classified."""
