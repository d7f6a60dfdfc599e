"""The standalone code location, loaded by ``workspace.yaml`` (``dagster dev -w workspace.yaml``): the
pipeline's component (:class:`rank_pipeline.defs.component.RankPipelineComponent`) with no attributes, so
every setting comes from the environment (:mod:`rank_pipeline.settings`) and the models folder is read
where it is used; inside a user's project (the working folder's), its ``init`` day is the partitions' start
until the data folder holds a snapshot. What the definitions hold: :mod:`rank_pipeline.defs.component`.
"""

from rank_pipeline.defs.component import RankPipelineComponent, build_definitions
from rank_pipeline.settings import find_project

defs = build_definitions(RankPipelineComponent().settings(None), find_project())
