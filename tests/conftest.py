"""Options shared by the test tree (registered here so that they work from any path)."""


def pytest_addoption(parser):
    parser.addoption("--qext-device", action="append", choices=("cpu", "cuda"),
                     help="device for the regression cases (repeatable; default: all present)")
