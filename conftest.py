"""Top-level pytest configuration. The moe-gather plugin itself loads through its pytest11 entry point."""

pytest_plugins = ("pytester",)
