"""`python -m judgeaudit`: the `judgeaudit` command, for a Python whose scripts directory is
not on PATH (a `pip install --user`, a venv not activated)."""

from judgeaudit.cli.main import main

if __name__ == "__main__":
    main()
