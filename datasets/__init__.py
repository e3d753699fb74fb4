"""Bundled and generated datasets for wid (installed as ``wid.datasets``)."""
