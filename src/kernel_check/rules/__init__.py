"""The rule pack: one module per code, named `kcNNN_<name>.py` / `kdNNN_<name>.py`."""
