"""The pipeline's steps as plain functions, called by both the Dagster assets and the command line."""
