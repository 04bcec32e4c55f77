"""CLI commands of the cost package (`otod flops`, `otod profile`); registered on the main group by otod.cli."""

COMMANDS: list = []
