"""Dagster layer: resources, partitions, assets, asset checks, the daily job and schedule.

Thin by design: the parts it wires (rank_pipeline.steps and the stages below it) import nothing from
Dagster and are tested on their own.
"""
