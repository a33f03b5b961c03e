"""The dynamic harness: spec -> build -> cases -> run -> sanitize -> report (see cli.py)."""
