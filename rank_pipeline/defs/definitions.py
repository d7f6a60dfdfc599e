"""The standalone code location, loaded by ``workspace.yaml`` (``dagster dev -w workspace.yaml``), and the
definitions the command line runs: inside a user's project (the working folder's), its component with the
attributes of its ``defs.yaml``, the environment overriding each, as ``dg`` loads it; elsewhere the pipeline's
component with no attributes, so every setting comes from the environment (:mod:`rank_pipeline.settings`) and
the models folder is read where it is used (:func:`rank_pipeline.defs.component.working_folder_definitions`).
What the definitions hold: :mod:`rank_pipeline.defs.component`.
"""

from rank_pipeline.defs.component import build_definitions, working_folder_definitions

__all__ = ["build_definitions", "defs"]

defs = working_folder_definitions()
