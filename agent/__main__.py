"""`python -m agent` is the `lessonloop` command."""

from agent.app.cli import main

main()
