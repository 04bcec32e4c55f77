"""``python -m otod`` runs the command line."""

from otod.cli import main

main()
