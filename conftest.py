pytest_plugins = ["ticketing.pytest_plugin"]
