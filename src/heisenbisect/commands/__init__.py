"""One module per `bisect` subcommand; each defines register(subparsers)."""
