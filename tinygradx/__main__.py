"""`python -m tinygradx`: run the `tinygradx` command.

The engine does not know where its applications live, so this looks the command up the way
the shell does: the `tinygradx` console script that the installed distribution declares.
"""
import sys
from importlib.metadata import entry_points


def main():
    found = entry_points(group="console_scripts", name="tinygradx")
    if not found:
        sys.exit("python -m tinygradx: error: the `tinygradx` command is not installed "
                 "(pip install -e . from the repository)")
    sys.exit(next(iter(found)).load()())


if __name__ == "__main__":
    main()
