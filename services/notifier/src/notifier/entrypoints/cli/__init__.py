"""The operator's and developer's command-line tools: `python -m notifier.entrypoints.cli.<tool> --help`."""
