"""Dagster layer: resources, partitions, assets, asset checks, the daily job and schedule.

Thin by design: the parts it wires (rank_pipeline.extract.day, .warehouse, .sql_models) import nothing from
Dagster and are tested on their own.
"""
