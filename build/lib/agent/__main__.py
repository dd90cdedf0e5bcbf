"""`python -m agent` is the `lessonloop` command."""

from agent.cli import main

main()
