"""`python -m arbiter` works like the `arbiter` command."""

from arbiter.cli import run

if __name__ == "__main__":
    run()
