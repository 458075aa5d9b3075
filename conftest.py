"""Top-level pytest configuration: this repository's suites run with the moe-gather plugin (its docstring is the
manual; other projects enable it with `-p moe_gather.pytest_plugin`), and pytester for the plugin's own tests."""

pytest_plugins = ("moe_gather.pytest_plugin", "pytester")
