"""The `judgeaudit` command line (typer). Imports everything; nothing imports it."""
